// libzbar's decoders check their own state with `zassert`: when a check fails they give up on
// the symbol and print "WARNING: FILE:LINE: FUNCTION: Assertion "..." failed." and some
// decoder state on stderr. Debian builds libzbar.a with those checks on, so `scan` printed
// such lines between its own (an ITF-14 turned by 150 degrees did it). They say nothing a
// user could act on, and a library must not write to the process's stderr: the link wraps
// `__fprintf_chk` (what a fortified `fprintf` becomes, and the only way libzbar prints;
// Package.swift, `--wrap`), and this drops that one message and passes every other call on.
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int __vfprintf_chk(FILE *stream, int flag, const char *format, va_list ap);

static const char zassert_prefix[] = "WARNING: %s:%d: %s: Assertion";

int __wrap___fprintf_chk(FILE *stream, int flag, const char *format, ...) {
    if (stream == stderr && strncmp(format, zassert_prefix, sizeof zassert_prefix - 1) == 0) {
        return 0;
    }
    va_list ap;
    va_start(ap, format);
    int written = __vfprintf_chk(stream, flag, format, ap);
    va_end(ap);
    return written;
}
