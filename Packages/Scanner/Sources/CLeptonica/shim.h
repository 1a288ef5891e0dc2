// leptonica (libleptonica-dev): scaling, blur, sharpening, rotation, thresholds and drawing
// for Scanner's image operations. Only Scanner's Swift files that work on pixels import it.
#include <leptonica/allheaders.h>
