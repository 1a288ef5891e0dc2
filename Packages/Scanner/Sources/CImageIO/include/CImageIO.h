// Image files to 8-bit pixels, without printing anything. Used by Scanner's ImageBuffer only.
#ifndef SHOPFLOOR_CIMAGEIO_H
#define SHOPFLOOR_CIMAGEIO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Outcome of probing or decoding.
typedef enum {
    SF_IMAGE_OK = 0,
    SF_IMAGE_EMPTY = 1,        // no bytes at all
    SF_IMAGE_NOT_IMAGE = 2,    // not a format we recognise
    SF_IMAGE_TRUNCATED = 3,    // recognised, but the data ends early
    SF_IMAGE_TOO_LARGE = 4,    // header announces more pixels than allowed
    SF_IMAGE_CORRUPT = 5,      // recognised, but the decoder rejected the data
    SF_IMAGE_NO_MEMORY = 6,
} sf_image_status;

/// Container formats recognised from the first bytes.
typedef enum {
    SF_FORMAT_UNKNOWN = 0,
    SF_FORMAT_PNG, SF_FORMAT_JPEG, SF_FORMAT_WEBP, SF_FORMAT_TIFF, SF_FORMAT_GIF,
    SF_FORMAT_PNM, SF_FORMAT_BMP, SF_FORMAT_JP2,
} sf_image_format;

/// Decoded pixels: `channels` is 1 (grey), 3 (RGB) or 4 (RGBA); rows are `stride` bytes.
typedef struct {
    int width;
    int height;
    int channels;
    int stride;
    uint8_t *pixels;  // malloc'd; release with sf_image_free
} sf_image;

/// The container format of `data`, from its magic bytes.
sf_image_format sf_image_sniff(const uint8_t *data, size_t length);

/// Reads only the header: dimensions without decoding pixels.
sf_image_status sf_image_probe(const uint8_t *data, size_t length, sf_image_format *format,
                               int *width, int *height, char *message, size_t message_size);

/// Decodes `data` after checking width * height <= max_pixels from the header.
sf_image_status sf_image_decode(const uint8_t *data, size_t length, uint64_t max_pixels,
                                sf_image *out, char *message, size_t message_size);

/// Frees the pixels of an image that sf_image_decode filled.
void sf_image_free(sf_image *image);

#ifdef __cplusplus
}
#endif
#endif
