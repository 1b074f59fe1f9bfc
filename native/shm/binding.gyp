{ "targets": [ { "target_name": "inss_shm", "sources": [ "shm.c" ] } ] }
