// libpng (libpng-dev): PNG decoding and encoding for CImageIO.
#include <png.h>
