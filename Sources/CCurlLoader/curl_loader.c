// libcurl, loaded on its first use instead of at every start.
//
// FoundationNetworking (URLSession) calls libcurl, so every app that links it had libcurl
// as a load-time dependency: ld.so mapped, relocated and bound libcurl and its ~30 shared
// objects (TLS, Kerberos, LDAP, SSH, IDN...) at every start, about a third of the CPU time
// of `reservations --help` or a loopback `show`, which never use URLSession (plain http
// goes over SuiteClient's socket transport). This file defines the libcurl functions
// FoundationNetworking calls; the first call loads libcurl with dlopen and each function
// forwards to the real one. The link directory beside this file holds a `libcurl.so` linker
// script, `INPUT(AS_NEEDED(libcurl.so.4))`, found before the system's for the apps that use
// this target (Package.swift), so the linker drops libcurl from the program's needed list
// once these definitions satisfy every reference. Should FoundationNetworking call a
// function not defined here, the link resolves it from libcurl as before and libcurl is a
// load-time dependency again: slower, never broken.
//
// A libcurl that cannot be loaded ends the process with a message on stderr and exit 1 (an
// error, CONVENTIONS), where a missing shared object used to stop every start.
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *library;
static pthread_once_t loaded = PTHREAD_ONCE_INIT;

static void load(void) {
  library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    fprintf(stderr, "error: cannot load libcurl for an https request: %s\n", dlerror());
    _exit(1);
  }
}

static void *symbol(const char *name) {
  pthread_once(&loaded, load);
  void *found = dlsym(library, name);
  if (!found) {
    fprintf(stderr, "error: the installed libcurl has no %s\n", name);
    _exit(1);
  }
  return found;
}

// Handles and enums are passed as what they are at the ABI level (pointers, int, long).
#define FORWARD(ret, name, params, args)                                                     \
  ret name params {                                                                          \
    static ret(*volatile real) params;                                                       \
    if (!real) real = (ret(*) params)symbol(#name);                                          \
    return real args;                                                                        \
  }

FORWARD(void, curl_easy_cleanup, (void *handle), (handle))
FORWARD(void *, curl_easy_init, (void), ())
FORWARD(int, curl_easy_pause, (void *handle, int mask), (handle, mask))
FORWARD(const char *, curl_easy_strerror, (int code), (code))
FORWARD(void, curl_free, (void *pointer), (pointer))
FORWARD(int, curl_global_init, (long flags), (flags))
FORWARD(int, curl_multi_add_handle, (void *multi, void *handle), (multi, handle))
FORWARD(int, curl_multi_assign, (void *multi, int socket, void *pointer), (multi, socket, pointer))
FORWARD(int, curl_multi_cleanup, (void *multi), (multi))
FORWARD(void *, curl_multi_info_read, (void *multi, int *left), (multi, left))
FORWARD(void *, curl_multi_init, (void), ())
FORWARD(int, curl_multi_remove_handle, (void *multi, void *handle), (multi, handle))
FORWARD(int, curl_multi_socket_action, (void *multi, int socket, int mask, int *running),
        (multi, socket, mask, running))
FORWARD(void *, curl_slist_append, (void *list, const char *string), (list, string))
FORWARD(void, curl_slist_free_all, (void *list), (list))
FORWARD(void *, curl_url, (void), ())
FORWARD(int, curl_url_get, (void *url, int part, char **out, unsigned flags), (url, part, out, flags))
FORWARD(int, curl_url_set, (void *url, int part, const char *in, unsigned flags),
        (url, part, in, flags))
FORWARD(char *, curl_version, (void), ())
FORWARD(void *, curl_version_info, (int age), (age))

// The setopt functions take one more argument whose type the option's number says (curl.h:
// CURLOPTTYPE_LONG 0, OBJECTPOINT 10000, FUNCTIONPOINT 20000, OFF_T 30000, BLOB 40000).
static int set_option(const char *name, void *handle, int option, va_list list) {
  typedef int (*with_long)(void *, int, long);
  typedef int (*with_pointer)(void *, int, void *);
  typedef int (*with_offset)(void *, int, int64_t);
  void *real = symbol(name);
  if (option < 10000) return ((with_long)real)(handle, option, va_arg(list, long));
  if (option >= 30000 && option < 40000) {
    return ((with_offset)real)(handle, option, va_arg(list, int64_t));
  }
  return ((with_pointer)real)(handle, option, va_arg(list, void *));
}

int curl_easy_setopt(void *handle, int option, ...) {
  va_list list;
  va_start(list, option);
  int result = set_option("curl_easy_setopt", handle, option, list);
  va_end(list);
  return result;
}

int curl_multi_setopt(void *multi, int option, ...) {
  va_list list;
  va_start(list, option);
  int result = set_option("curl_multi_setopt", multi, option, list);
  va_end(list);
  return result;
}

// getinfo's one more argument is always a pointer to where the answer goes.
int curl_easy_getinfo(void *handle, int info, ...) {
  typedef int (*with_pointer)(void *, int, void *);
  static with_pointer volatile real;
  if (!real) real = (with_pointer)symbol("curl_easy_getinfo");
  va_list list;
  va_start(list, info);
  void *out = va_arg(list, void *);
  va_end(list);
  return real(handle, info, out);
}
