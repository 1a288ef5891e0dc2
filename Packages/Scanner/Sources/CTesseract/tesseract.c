// See CTesseract.h: libtesseract through dlopen, on first use.
#include "CTesseract.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_status = -1;
static char load_message[256];

static TessBaseAPI * (*p_TessBaseAPICreate)(void);
static void (*p_TessBaseAPIDelete)(TessBaseAPI *handle);
static void (*p_TessBaseAPIEnd)(TessBaseAPI *handle);
static void (*p_TessBaseAPIClear)(TessBaseAPI *handle);
static int (*p_TessBaseAPIInit3)(TessBaseAPI *handle, const char *datapath, const char *language);
static BOOL (*p_TessBaseAPISetVariable)(TessBaseAPI *handle, const char *name, const char *value);
static void (*p_TessBaseAPISetPageSegMode)(TessBaseAPI *handle, TessPageSegMode mode);
static void (*p_TessBaseAPISetImage)(TessBaseAPI *handle, const unsigned char *imagedata, int width, int height, int bytes_per_pixel, int bytes_per_line);
static void (*p_TessBaseAPISetSourceResolution)(TessBaseAPI *handle, int ppi);
static int (*p_TessBaseAPIRecognize)(TessBaseAPI *handle, ETEXT_DESC *monitor);
static TessResultIterator * (*p_TessBaseAPIGetIterator)(TessBaseAPI *handle);
static void (*p_TessResultIteratorDelete)(TessResultIterator *handle);
static TessPageIterator * (*p_TessResultIteratorGetPageIterator)(TessResultIterator *handle);
static BOOL (*p_TessResultIteratorNext)(TessResultIterator *handle, TessPageIteratorLevel level);
static char * (*p_TessResultIteratorGetUTF8Text)(const TessResultIterator *handle, TessPageIteratorLevel level);
static float (*p_TessResultIteratorConfidence)(const TessResultIterator *handle, TessPageIteratorLevel level);
static void (*p_TessDeleteText)(const char *text);
static BOOL (*p_TessPageIteratorBoundingBox)(const TessPageIterator *handle, TessPageIteratorLevel level, int *left, int *top, int *right, int *bottom);
static BOOL (*p_TessPageIteratorIsAtBeginningOf)(const TessPageIterator *handle, TessPageIteratorLevel level);

// The pointers have exactly the types capi.h declares (no link dependency: typeof only).
_Static_assert(__builtin_types_compatible_p(__typeof__(&TessBaseAPICreate), __typeof__(p_TessBaseAPICreate)), "TessBaseAPICreate");
_Static_assert(__builtin_types_compatible_p(__typeof__(&TessBaseAPIDelete), __typeof__(p_TessBaseAPIDelete)), "TessBaseAPIDelete");
_Static_assert(__builtin_types_compatible_p(__typeof__(&TessBaseAPIEnd), __typeof__(p_TessBaseAPIEnd)), "TessBaseAPIEnd");
_Static_assert(__builtin_types_compatible_p(__typeof__(&TessBaseAPIClear), __typeof__(p_TessBaseAPIClear)), "TessBaseAPIClear");
_Static_assert(__builtin_types_compatible_p(__typeof__(&TessBaseAPIInit3), __typeof__(p_TessBaseAPIInit3)), "TessBaseAPIInit3");
_Static_assert(__builtin_types_compatible_p(__typeof__(&TessBaseAPISetVariable), __typeof__(p_TessBaseAPISetVariable)), "TessBaseAPISetVariable");
_Static_assert(__builtin_types_compatible_p(__typeof__(&TessBaseAPISetPageSegMode), __typeof__(p_TessBaseAPISetPageSegMode)), "TessBaseAPISetPageSegMode");
_Static_assert(__builtin_types_compatible_p(__typeof__(&TessBaseAPISetImage), __typeof__(p_TessBaseAPISetImage)), "TessBaseAPISetImage");
_Static_assert(__builtin_types_compatible_p(__typeof__(&TessBaseAPISetSourceResolution), __typeof__(p_TessBaseAPISetSourceResolution)), "TessBaseAPISetSourceResolution");
_Static_assert(__builtin_types_compatible_p(__typeof__(&TessBaseAPIRecognize), __typeof__(p_TessBaseAPIRecognize)), "TessBaseAPIRecognize");
_Static_assert(__builtin_types_compatible_p(__typeof__(&TessBaseAPIGetIterator), __typeof__(p_TessBaseAPIGetIterator)), "TessBaseAPIGetIterator");
_Static_assert(__builtin_types_compatible_p(__typeof__(&TessResultIteratorDelete), __typeof__(p_TessResultIteratorDelete)), "TessResultIteratorDelete");
_Static_assert(__builtin_types_compatible_p(__typeof__(&TessResultIteratorGetPageIterator), __typeof__(p_TessResultIteratorGetPageIterator)), "TessResultIteratorGetPageIterator");
_Static_assert(__builtin_types_compatible_p(__typeof__(&TessResultIteratorNext), __typeof__(p_TessResultIteratorNext)), "TessResultIteratorNext");
_Static_assert(__builtin_types_compatible_p(__typeof__(&TessResultIteratorGetUTF8Text), __typeof__(p_TessResultIteratorGetUTF8Text)), "TessResultIteratorGetUTF8Text");
_Static_assert(__builtin_types_compatible_p(__typeof__(&TessResultIteratorConfidence), __typeof__(p_TessResultIteratorConfidence)), "TessResultIteratorConfidence");
_Static_assert(__builtin_types_compatible_p(__typeof__(&TessDeleteText), __typeof__(p_TessDeleteText)), "TessDeleteText");
_Static_assert(__builtin_types_compatible_p(__typeof__(&TessPageIteratorBoundingBox), __typeof__(p_TessPageIteratorBoundingBox)), "TessPageIteratorBoundingBox");
_Static_assert(__builtin_types_compatible_p(__typeof__(&TessPageIteratorIsAtBeginningOf), __typeof__(p_TessPageIteratorIsAtBeginningOf)), "TessPageIteratorIsAtBeginningOf");

static void load(void) {
    // RTLD_LOCAL: its symbols stay its own; RTLD_NOW: a missing symbol fails here, not later.
    void *lib = dlopen("libtesseract.so.5", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(load_message, sizeof load_message, "%s", why ? why : "libtesseract.so.5 not found");
        return;
    }
#define RESOLVE(name)                                                                   \
    do {                                                                                \
        *(void **)(&p_##name) = dlsym(lib, #name);                                      \
        if (!p_##name) {                                                                \
            snprintf(load_message, sizeof load_message, "libtesseract.so.5 has no %s", #name); \
            return;                                                                     \
        }                                                                               \
    } while (0)

    RESOLVE(TessBaseAPICreate);
    RESOLVE(TessBaseAPIDelete);
    RESOLVE(TessBaseAPIEnd);
    RESOLVE(TessBaseAPIClear);
    RESOLVE(TessBaseAPIInit3);
    RESOLVE(TessBaseAPISetVariable);
    RESOLVE(TessBaseAPISetPageSegMode);
    RESOLVE(TessBaseAPISetImage);
    RESOLVE(TessBaseAPISetSourceResolution);
    RESOLVE(TessBaseAPIRecognize);
    RESOLVE(TessBaseAPIGetIterator);
    RESOLVE(TessResultIteratorDelete);
    RESOLVE(TessResultIteratorGetPageIterator);
    RESOLVE(TessResultIteratorNext);
    RESOLVE(TessResultIteratorGetUTF8Text);
    RESOLVE(TessResultIteratorConfidence);
    RESOLVE(TessDeleteText);
    RESOLVE(TessPageIteratorBoundingBox);
    RESOLVE(TessPageIteratorIsAtBeginningOf);
#undef RESOLVE
    load_status = 0;
}

int sf_tess_load(char *message, size_t message_size) {
    pthread_once(&load_once, load);
    if (load_status != 0 && message && message_size) {
        snprintf(message, message_size, "%s", load_message);
    }
    return load_status;
}

int sf_omp_get_thread_limit(void) {
    // libgomp is already mapped once libtesseract is; otherwise it is small to load alone.
    void *gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!gomp) return 0;
    int (*limit)(void);
    *(void **)(&limit) = dlsym(gomp, "omp_get_thread_limit");
    return limit ? limit() : 0;
}

TessBaseAPI * sf_TessBaseAPICreate(void) { return p_TessBaseAPICreate(); }
void sf_TessBaseAPIDelete(TessBaseAPI *handle) { p_TessBaseAPIDelete(handle); }
void sf_TessBaseAPIEnd(TessBaseAPI *handle) { p_TessBaseAPIEnd(handle); }
void sf_TessBaseAPIClear(TessBaseAPI *handle) { p_TessBaseAPIClear(handle); }
int sf_TessBaseAPIInit3(TessBaseAPI *handle, const char *datapath, const char *language) { return p_TessBaseAPIInit3(handle, datapath, language); }
BOOL sf_TessBaseAPISetVariable(TessBaseAPI *handle, const char *name, const char *value) { return p_TessBaseAPISetVariable(handle, name, value); }
void sf_TessBaseAPISetPageSegMode(TessBaseAPI *handle, TessPageSegMode mode) { p_TessBaseAPISetPageSegMode(handle, mode); }
void sf_TessBaseAPISetImage(TessBaseAPI *handle, const unsigned char *imagedata, int width, int height, int bytes_per_pixel, int bytes_per_line) { p_TessBaseAPISetImage(handle, imagedata, width, height, bytes_per_pixel, bytes_per_line); }
void sf_TessBaseAPISetSourceResolution(TessBaseAPI *handle, int ppi) { p_TessBaseAPISetSourceResolution(handle, ppi); }
int sf_TessBaseAPIRecognize(TessBaseAPI *handle, ETEXT_DESC *monitor) { return p_TessBaseAPIRecognize(handle, monitor); }
TessResultIterator * sf_TessBaseAPIGetIterator(TessBaseAPI *handle) { return p_TessBaseAPIGetIterator(handle); }
void sf_TessResultIteratorDelete(TessResultIterator *handle) { p_TessResultIteratorDelete(handle); }
TessPageIterator * sf_TessResultIteratorGetPageIterator(TessResultIterator *handle) { return p_TessResultIteratorGetPageIterator(handle); }
BOOL sf_TessResultIteratorNext(TessResultIterator *handle, TessPageIteratorLevel level) { return p_TessResultIteratorNext(handle, level); }
char * sf_TessResultIteratorGetUTF8Text(const TessResultIterator *handle, TessPageIteratorLevel level) { return p_TessResultIteratorGetUTF8Text(handle, level); }
float sf_TessResultIteratorConfidence(const TessResultIterator *handle, TessPageIteratorLevel level) { return p_TessResultIteratorConfidence(handle, level); }
void sf_TessDeleteText(const char *text) { p_TessDeleteText(text); }
BOOL sf_TessPageIteratorBoundingBox(const TessPageIterator *handle, TessPageIteratorLevel level, int *left, int *top, int *right, int *bottom) { return p_TessPageIteratorBoundingBox(handle, level, left, top, right, bottom); }
BOOL sf_TessPageIteratorIsAtBeginningOf(const TessPageIterator *handle, TessPageIteratorLevel level) { return p_TessPageIteratorIsAtBeginningOf(handle, level); }
