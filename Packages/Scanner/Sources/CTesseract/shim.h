// Tesseract's C API (libtesseract-dev). Only Scanner's OCR files import this module.
#include <tesseract/capi.h>

// libgomp (linked by libtesseract): the thread limit read from OMP_THREAD_LIMIT when the
// process started. Declared here because omp.h is not on clang's include path.
int omp_get_thread_limit(void);
