// Tesseract's C API (libtesseract-dev). Only Scanner's OCR files import this module.
#include <tesseract/capi.h>
