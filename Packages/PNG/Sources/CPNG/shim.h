// libpng (libpng-dev): the suite's one libpng module, for Scanner's image decoders, the
// server's demo images and the clients' product images.
#include <png.h>
