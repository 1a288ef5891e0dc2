// libFuzzer harness for Scanner's image decoders (CImageIO: PNG, JPEG, TIFF pages, GIF frames,
// BMP with RLE, and leptonica's formats), built by scripts/fuzz.sh with
// -fsanitize=fuzzer,address. Every frame is decoded into a buffer of exactly the size the
// decoder announced, so any write past it is caught.
#include "CImageIO.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char message[256];
    sf_frames *frames = NULL;
    if (sf_frames_open(data, size, 4000000, 8, &frames, message, sizeof message) != SF_IMAGE_OK) return 0;
    int width = 0, height = 0, channels = 0;
    while (sf_frames_next(frames, &width, &height, &channels, message, sizeof message) == SF_IMAGE_OK) {
        if (width <= 0 || height <= 0 || (channels != 1 && channels != 3 && channels != 4) ||
            (uint64_t)width * height > 4000000)
            abort();  // the decoder announced a frame it should have refused
        size_t stride = (size_t)width * channels;
        uint8_t *pixels = malloc(stride * (size_t)height);
        if (!pixels) break;
        sf_image_status status = sf_frames_read(frames, pixels, stride, message, sizeof message);
        free(pixels);
        if (status != SF_IMAGE_OK) break;
    }
    sf_frames_close(frames);
    return 0;
}
