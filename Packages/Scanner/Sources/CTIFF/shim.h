// libtiff (libtiff-dev): TIFF pages for CImageIO.
#include <tiffio.h>
