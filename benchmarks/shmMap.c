// A file of shared memory (/dev/shm) mapped into a Node process, for benchmarks/shmPath.ts: the one
// thing Node cannot do without a native addon (docs/serving.md "Not done: shared memory between the
// scheduler and a worker"). `map(path, bytes)` opens (creating if need be) the file, sizes it to
// `bytes`, maps it MAP_SHARED read-write and returns it as an external ArrayBuffer; every process that
// maps the same path sees the same bytes. The mapping ends when the ArrayBuffer is collected.
// Built by the benchmark into a temporary directory with the node-gyp that npm bundles (N-API only,
// so one build serves every Node version); nothing of the project depends on it.
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void unmap(napi_env env, void *data, void *hint) {
  (void)env;
  munmap(data, (size_t)(uintptr_t)hint);
}

static napi_value fail(napi_env env, const char *what, const char *path) {
  char msg[4200];
  snprintf(msg, sizeof msg, "%s %s: %s", what, path, strerror(errno));
  napi_throw_error(env, NULL, msg);
  return NULL;
}

static napi_value map_file(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  char path[4096];
  size_t len = 0;
  int64_t bytes = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2 ||
      napi_get_value_string_utf8(env, argv[0], path, sizeof path, &len) != napi_ok || len == 0 ||
      len >= sizeof path - 1 || napi_get_value_int64(env, argv[1], &bytes) != napi_ok || bytes <= 0) {
    napi_throw_type_error(env, NULL, "map(path: non-empty string, bytes: positive integer)");
    return NULL;
  }
  int fd = open(path, O_RDWR | O_CREAT, 0600);
  if (fd < 0) return fail(env, "open", path);
  if (ftruncate(fd, (off_t)bytes) != 0) {
    close(fd);
    return fail(env, "ftruncate", path);
  }
  void *p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return fail(env, "mmap", path);
  napi_value ab;
  if (napi_create_external_arraybuffer(env, p, (size_t)bytes, unmap, (void *)(uintptr_t)bytes, &ab) != napi_ok) {
    munmap(p, (size_t)bytes);
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
