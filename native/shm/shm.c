// inss's one native addon (docs/serving.md, "Shared memory between the scheduler and its
// workers"): maps a file of shared memory (/dev/shm) into a Node process, the one thing Node cannot do
// without native code. The scheduler creates its region's file (node:fs: exclusively, mode 0600,
// sized) and maps it read-write; a simulated worker on the same host maps the same file read-only and
// reads request bodies in place; benchmarks/shmPath.ts maps one of its own.
//
//   map(path: string, writable: boolean): ArrayBuffer
//
// maps the whole file (its size now) MAP_SHARED, PROT_READ (| PROT_WRITE when writable), and returns
// it as an external ArrayBuffer; every process that maps the same file sees the same bytes. The
// mapping ends when the ArrayBuffer is collected (the file's own life is its creator's business).
// Throws an Error naming the call that failed (open, fstat, mmap) and errno's text.
// Built at install (`npm run build:shm`, native/shm/build.mjs, with the node-gyp npm bundles); N-API
// only, so one build serves every Node version. Loaded by src/protocol/shmMap.ts, when it is there.
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void unmap(napi_env env, void *data, void *hint) {
  (void)env;
  munmap(data, (size_t)(uintptr_t)hint);
}

static napi_value fail(napi_env env, const char *what, const char *path, int err) {
  char msg[4200];
  snprintf(msg, sizeof msg, "%s %s: %s", what, path, strerror(err));
  napi_throw_error(env, NULL, msg);
  return NULL;
}

static napi_value map_file(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  char path[4096];
  size_t len = 0;
  bool writable = false;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2 ||
      napi_get_value_string_utf8(env, argv[0], path, sizeof path, &len) != napi_ok || len == 0 ||
      len >= sizeof path - 1 || napi_get_value_bool(env, argv[1], &writable) != napi_ok) {
    napi_throw_type_error(env, NULL, "map(path: non-empty string, writable: boolean)");
    return NULL;
  }
  int fd = open(path, writable ? O_RDWR : O_RDONLY);
  if (fd < 0) return fail(env, "open", path, errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return fail(env, "fstat", path, err);
  }
  if (st.st_size <= 0) {
    close(fd);
    return fail(env, "map", path, EINVAL);
  }
  size_t bytes = (size_t)st.st_size;
  void *p = mmap(NULL, bytes, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (p == MAP_FAILED) return fail(env, "mmap", path, err);
  napi_value ab;
  if (napi_create_external_arraybuffer(env, p, bytes, unmap, (void *)(uintptr_t)bytes, &ab) != napi_ok) {
    munmap(p, bytes);
    napi_throw_error(env, NULL, "napi_create_external_arraybuffer failed");
    return NULL;
  }
  return ab;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  napi_create_function(env, "map", NAPI_AUTO_LENGTH, map_file, NULL, &fn);
  napi_set_named_property(env, exports, "map", fn);
  return exports;
}
