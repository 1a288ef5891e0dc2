// libjpeg (libjpeg-dev): JPEG decoding for CImageIO. jpeglib.h uses FILE: stdio.h first.
#include <stdio.h>
#include <jpeglib.h>
