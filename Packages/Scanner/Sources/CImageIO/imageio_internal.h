// CImageIO's internals, shared by its source files: the libraries' headers, the decoder
// state (one struct for every format) and the per-format decoders. Not installed: the
// library's interface is include/CImageIO.h.
#ifndef SF_IMAGEIO_INTERNAL_H
#define SF_IMAGEIO_INTERNAL_H

#include "CImageIO.h"

#include <stdio.h>  // before jpeglib.h, which uses FILE

#include <gif_lib.h>
#include <jpeglib.h>
#include <jerror.h>
#include <leptonica/allheaders.h>
#include <png.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>

static inline void set_message(char *message, size_t size, const char *text) {
    if (message && size) snprintf(message, size, "%s", text);
}

static inline uint32_t be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint32_t le32(const uint8_t *p) { return p[0] | (p[1] << 8) | (p[2] << 16) | ((uint32_t)p[3] << 24); }
static inline uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static inline int too_large(uint64_t w, uint64_t h, uint64_t max_pixels, char *msg, size_t ms) {
    if (w * h <= max_pixels) return 0;
    if (msg && ms)
        snprintf(msg, ms, "the image is %llu x %llu pixels, more than the limit of %llu",
                 (unsigned long long)w, (unsigned long long)h, (unsigned long long)max_pixels);
    return 1;
}

// ---------- the decoder state ----------

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    int ended_early;
} jpeg_quiet_error;

typedef struct {
    jmp_buf jump;
    const uint8_t *data;
    size_t length;
    size_t offset;
    int ran_out;
    char error[160];
} png_source;

typedef struct {
    const uint8_t *data;
    size_t length;
    uint64_t offset;
} mem_source;

struct sf_frames {
    const uint8_t *data;
    size_t length;
    uint64_t max_pixels;
    int max_frames;
    sf_image_format format;
    int count;
    uint64_t largest;
    int index;      // frames handed out by sf_frames_next
    int pending;    // sf_frames_next done, sf_frames_read not yet
    int width, height, channels;
    // PNG
    png_source png_src;
    png_structp png;
    png_infop png_info;
    // JPEG
    struct jpeg_decompress_struct *jpeg;
    jpeg_quiet_error *jpeg_err;
    int jpeg_cmyk, jpeg_adobe;
    // TIFF
    TIFF *tif;
    mem_source tif_src;
    int tif_direct;  // 8-bit contiguous grey or RGB (with alpha): read without the RGBA interface
    // GIF
    GifFileType *gif;
    mem_source gif_src;
    uint8_t *canvas;   // RGBA, width * height * 4
    int gif_disposal;  // of the frame drawn last
    int gif_left, gif_top, gif_w, gif_h;
    // leptonica
    PIX *pix;
};

// The decoders of each format, used by the entry points in imageio.c (hidden: not part of
// the library's interface).
#pragma GCC visibility push(hidden)

extern __thread char sf_tiff_error[160];  // libtiff's last error message on this thread
void sf_quiet(void);                      // silences leptonica and libtiff, once per process

sf_image_status sf_jpeg_probe(const uint8_t *d, size_t n, int *w, int *h, char *msg, size_t ms);
sf_image_status sf_jpeg_next(sf_frames *f, char *msg, size_t ms);
sf_image_status sf_jpeg_read(sf_frames *f, uint8_t *pixels, size_t stride, char *msg, size_t ms);
void sf_jpeg_release(sf_frames *f);

sf_image_status sf_png_probe(const uint8_t *d, size_t n, int *w, int *h, char *msg, size_t ms);
sf_image_status sf_png_next(sf_frames *f, char *msg, size_t ms);
sf_image_status sf_png_read(sf_frames *f, uint8_t *pixels, size_t stride, char *msg, size_t ms);
void sf_png_release(sf_frames *f);
void sf_png_warning_fn(png_structp png, png_const_charp text);

sf_image_status sf_bmp_probe(const uint8_t *d, size_t n, int *w, int *h, char *msg, size_t ms);
sf_image_status sf_bmp_next(sf_frames *f, char *msg, size_t ms);
sf_image_status sf_bmp_read(sf_frames *f, uint8_t *pixels, size_t stride, char *msg, size_t ms);

sf_image_status sf_tiff_probe(const uint8_t *d, size_t n, int *w, int *h, char *msg, size_t ms);
sf_image_status sf_tiff_open(sf_frames *f, char *msg, size_t ms);
sf_image_status sf_tiff_next(sf_frames *f, char *msg, size_t ms);
sf_image_status sf_tiff_read(sf_frames *f, uint8_t *pixels, size_t stride, char *msg, size_t ms);

sf_image_status sf_gif_open(sf_frames *f, char *msg, size_t ms);
sf_image_status sf_gif_next(sf_frames *f, char *msg, size_t ms);
sf_image_status sf_gif_read(sf_frames *f, uint8_t *pixels, size_t stride);

#pragma GCC visibility pop

#endif
