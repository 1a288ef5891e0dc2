// giflib (libgif-dev): GIF frames for CImageIO.
#include <gif_lib.h>
