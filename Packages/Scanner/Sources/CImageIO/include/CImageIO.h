// Image files to 8-bit pixels, frame by frame, without printing anything. Used by Scanner's
// ImageBuffer and ImageFrames only.
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
    SF_IMAGE_END = 7,          // sf_frames_next: no more frames
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

/// Reads only the header: the first frame's dimensions without decoding pixels. Works on a
/// prefix of the file: SF_IMAGE_TRUNCATED means the header is not all in `data`.
sf_image_status sf_image_probe(const uint8_t *data, size_t length, sf_image_format *format,
                               int *width, int *height, char *message, size_t message_size);

/// Decodes the first frame of `data` after checking width * height <= max_pixels.
sf_image_status sf_image_decode(const uint8_t *data, size_t length, uint64_t max_pixels,
                                sf_image *out, char *message, size_t message_size);

/// Frees the pixels of an image that sf_image_decode filled.
void sf_image_free(sf_image *image);

/// A decoder over the frames of one encoded image: every page of a TIFF, every frame of a
/// GIF (composited as a viewer shows it), the one image of other formats. One thread at a
/// time; `data` must outlive it.
typedef struct sf_frames sf_frames;

/// Opens `data`, reading headers only (for a TIFF every page's, for a GIF the frame count).
/// Every frame is checked against `max_pixels` before it is decoded; at most `max_frames`
/// are counted (a count of max_frames + 1 means "more").
sf_image_status sf_frames_open(const uint8_t *data, size_t length, uint64_t max_pixels,
                               int max_frames, sf_frames **out, char *message,
                               size_t message_size);

/// The container format.
sf_image_format sf_frames_format(const sf_frames *frames);

/// How many frames the image holds (up to max_frames + 1).
int sf_frames_count(const sf_frames *frames);

/// The largest frame's width * height (the GIF canvas for GIFs).
uint64_t sf_frames_largest(const sf_frames *frames);

/// Moves to the next frame and gives its size and channels (1, 3 or 4); SF_IMAGE_END after
/// the last. Must be followed by sf_frames_read before the next call.
sf_image_status sf_frames_next(sf_frames *frames, int *width, int *height, int *channels,
                               char *message, size_t message_size);

/// Decodes the frame sf_frames_next described into `pixels`, rows `stride` bytes apart
/// (stride >= width * channels, stride * height bytes).
sf_image_status sf_frames_read(sf_frames *frames, uint8_t *pixels, size_t stride,
                               char *message, size_t message_size);

/// Releases the decoder.
void sf_frames_close(sf_frames *frames);

/// Encodes 8-bit pixels (`channels` 1 grey, 3 RGB, 4 RGBA; rows `stride` bytes apart) as a
/// PNG in memory through libpng, printing nothing. On SF_IMAGE_OK `*out` holds `*out_length`
/// malloc'd bytes (release with free); otherwise `message` says why.
sf_image_status sf_png_encode(const uint8_t *pixels, int width, int height, int channels,
                              size_t stride, uint8_t **out, size_t *out_length, char *message,
                              size_t message_size);

#ifdef __cplusplus
}
#endif
#endif
