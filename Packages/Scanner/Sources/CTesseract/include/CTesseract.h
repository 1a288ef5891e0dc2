// Tesseract's C API, loaded on first use: libtesseract (and libgomp, libcurl, libarchive and
// the rest it brings, about 40 shared objects) is dlopen'ed only when OCR runs, so programs
// that never read text (`scan` for barcodes, `scan --help`) never map it. Only Scanner's OCR
// files import this module; they call the sf_ functions, never libtesseract directly.
#ifndef SHOPFLOOR_CTESSERACT_H
#define SHOPFLOOR_CTESSERACT_H

#include <stddef.h>
#include <tesseract/capi.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Loads libtesseract.so.5 and resolves the functions below, once per process (thread-safe).
/// Returns 0 when loaded; otherwise non-zero with the loader's reason in `message`. Every
/// call below requires a successful load first.
int sf_tess_load(char *message, size_t message_size);

/// libgomp's omp_get_thread_limit (the limit read from OMP_THREAD_LIMIT when libgomp was
/// loaded, the process's start or sf_tess_load), or 0 when libgomp cannot be loaded.
int sf_omp_get_thread_limit(void);

TessBaseAPI * sf_TessBaseAPICreate(void);
void sf_TessBaseAPIDelete(TessBaseAPI *handle);
void sf_TessBaseAPIEnd(TessBaseAPI *handle);
void sf_TessBaseAPIClear(TessBaseAPI *handle);
int sf_TessBaseAPIInit3(TessBaseAPI *handle, const char *datapath, const char *language);
BOOL sf_TessBaseAPISetVariable(TessBaseAPI *handle, const char *name, const char *value);
void sf_TessBaseAPISetPageSegMode(TessBaseAPI *handle, TessPageSegMode mode);
void sf_TessBaseAPISetImage(TessBaseAPI *handle, const unsigned char *imagedata, int width, int height, int bytes_per_pixel, int bytes_per_line);
void sf_TessBaseAPISetSourceResolution(TessBaseAPI *handle, int ppi);
int sf_TessBaseAPIRecognize(TessBaseAPI *handle, ETEXT_DESC *monitor);
TessResultIterator * sf_TessBaseAPIGetIterator(TessBaseAPI *handle);
void sf_TessResultIteratorDelete(TessResultIterator *handle);
TessPageIterator * sf_TessResultIteratorGetPageIterator(TessResultIterator *handle);
BOOL sf_TessResultIteratorNext(TessResultIterator *handle, TessPageIteratorLevel level);
char * sf_TessResultIteratorGetUTF8Text(const TessResultIterator *handle, TessPageIteratorLevel level);
float sf_TessResultIteratorConfidence(const TessResultIterator *handle, TessPageIteratorLevel level);
void sf_TessDeleteText(const char *text);
BOOL sf_TessPageIteratorBoundingBox(const TessPageIterator *handle, TessPageIteratorLevel level, int *left, int *top, int *right, int *bottom);
BOOL sf_TessPageIteratorIsAtBeginningOf(const TessPageIterator *handle, TessPageIteratorLevel level);

#ifdef __cplusplus
}
#endif
#endif
