// Image decoding that never writes to stderr, frame by frame, into memory the caller owns.
//
// PNG and JPEG go through libpng and libjpeg directly with our own error and warning
// callbacks (both print otherwise) and stream rows straight into the caller's buffer, so a
// frame costs its pixels once. TIFF goes through libtiff's RGBA interface (strips and tiles,
// 1-16 bits, grey, palette, RGB, CMYK, YCbCr; every page), GIF through giflib (every frame,
// composited), BMP through our own reader (palette, 16/24/32-bit, bit fields, RLE4/RLE8),
// WebP, PNM and JPEG 2000 through leptonica with its messages switched off.
#define _GNU_SOURCE
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

static void set_message(char *message, size_t size, const char *text) {
    if (message && size) snprintf(message, size, "%s", text);
}

sf_image_format sf_image_sniff(const uint8_t *d, size_t n) {
    if (n >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0) return SF_FORMAT_PNG;
    if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return SF_FORMAT_JPEG;
    if (n >= 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0) return SF_FORMAT_WEBP;
    if (n >= 4 && (memcmp(d, "II*\0", 4) == 0 || memcmp(d, "MM\0*", 4) == 0)) return SF_FORMAT_TIFF;
    if (n >= 6 && (memcmp(d, "GIF87a", 6) == 0 || memcmp(d, "GIF89a", 6) == 0)) return SF_FORMAT_GIF;
    if (n >= 2 && d[0] == 'B' && d[1] == 'M') return SF_FORMAT_BMP;
    if (n >= 3 && d[0] == 'P' && d[1] >= '1' && d[1] <= '7' &&
        (d[2] == '\n' || d[2] == '\r' || d[2] == ' ' || d[2] == '\t'))
        return SF_FORMAT_PNM;
    if (n >= 12 && memcmp(d, "\0\0\0\x0CjP  \r\n\x87\n", 12) == 0) return SF_FORMAT_JP2;
    if (n >= 4 && memcmp(d, "\xFF\x4F\xFF\x51", 4) == 0) return SF_FORMAT_JP2;
    return SF_FORMAT_UNKNOWN;
}

// ---------- quiet libraries ----------

static pthread_once_t quiet_once = PTHREAD_ONCE_INIT;
static __thread char tiff_error[160];

static void discard_message(const char *text) { (void)text; }

static void tiff_error_handler(const char *module, const char *format, va_list args) {
    (void)module;
    vsnprintf(tiff_error, sizeof tiff_error, format, args);
}

static void tiff_warning_handler(const char *module, const char *format, va_list args) {
    (void)module;
    (void)format;
    (void)args;
}

// Leptonica prints some messages through its stderr handler rather than its
// severity-filtered macros, and libtiff prints through process-wide handlers: silence all.
static void make_libraries_quiet(void) {
    setMsgSeverity(L_SEVERITY_NONE);
    leptSetStderrHandler(discard_message);
    TIFFSetErrorHandler(tiff_error_handler);
    TIFFSetWarningHandler(tiff_warning_handler);
}

static void quiet(void) { pthread_once(&quiet_once, make_libraries_quiet); }

static uint32_t be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static uint32_t le32(const uint8_t *p) { return p[0] | (p[1] << 8) | (p[2] << 16) | ((uint32_t)p[3] << 24); }
static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static int too_large(uint64_t w, uint64_t h, uint64_t max_pixels, char *msg, size_t ms) {
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

// ---------- JPEG through libjpeg ----------
// libjpeg's default error manager prints warnings ("Premature end of JPEG file", "Corrupt
// JPEG data") to stderr; ours records the message and jumps back.

static void jpeg_error_exit_fn(j_common_ptr cinfo) {
    jpeg_quiet_error *err = (jpeg_quiet_error *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, err->message);
    longjmp(err->jump, 1);
}

static void jpeg_emit_fn(j_common_ptr cinfo, int level) {
    jpeg_quiet_error *err = (jpeg_quiet_error *)cinfo->err;
    if (level >= 0) return;
    if (cinfo->err->msg_code == JWRN_JPEG_EOF) err->ended_early = 1;
}

static void jpeg_output_fn(j_common_ptr cinfo) { (void)cinfo; }

static void jpeg_release(sf_frames *f) {
    if (f->jpeg) {
        jpeg_destroy_decompress(f->jpeg);
        free(f->jpeg);
        f->jpeg = NULL;
    }
    free(f->jpeg_err);
    f->jpeg_err = NULL;
}

static sf_image_status jpeg_probe(const uint8_t *d, size_t n, int *w, int *h, char *msg, size_t ms) {
    struct jpeg_decompress_struct cinfo;
    jpeg_quiet_error err;
    memset(&err, 0, sizeof err);
    cinfo.err = jpeg_std_error(&err.base);
    err.base.error_exit = jpeg_error_exit_fn;
    err.base.emit_message = jpeg_emit_fn;
    err.base.output_message = jpeg_output_fn;
    if (setjmp(err.jump)) {
        jpeg_destroy_decompress(&cinfo);
        set_message(msg, ms, err.message[0] ? err.message : "the JPEG header is invalid");
        return err.ended_early ? SF_IMAGE_TRUNCATED : SF_IMAGE_CORRUPT;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, d, (unsigned long)n);
    jpeg_read_header(&cinfo, TRUE);
    *w = (int)cinfo.image_width;
    *h = (int)cinfo.image_height;
    jpeg_destroy_decompress(&cinfo);
    return SF_IMAGE_OK;
}

static sf_image_status jpeg_next(sf_frames *f, char *msg, size_t ms) {
    f->jpeg = calloc(1, sizeof *f->jpeg);
    f->jpeg_err = calloc(1, sizeof *f->jpeg_err);
    if (!f->jpeg || !f->jpeg_err) {
        jpeg_release(f);
        return SF_IMAGE_NO_MEMORY;
    }
    struct jpeg_decompress_struct *cinfo = f->jpeg;
    jpeg_quiet_error *err = f->jpeg_err;
    cinfo->err = jpeg_std_error(&err->base);
    err->base.error_exit = jpeg_error_exit_fn;
    err->base.emit_message = jpeg_emit_fn;
    err->base.output_message = jpeg_output_fn;
    if (setjmp(err->jump)) {
        set_message(msg, ms, err->message[0] ? err->message : "the JPEG data is invalid");
        sf_image_status status = err->ended_early ? SF_IMAGE_TRUNCATED : SF_IMAGE_CORRUPT;
        jpeg_release(f);
        return status;
    }
    jpeg_create_decompress(cinfo);
    jpeg_mem_src(cinfo, f->data, (unsigned long)f->length);
    jpeg_read_header(cinfo, TRUE);
    if (too_large(cinfo->image_width, cinfo->image_height, f->max_pixels, msg, ms)) {
        jpeg_release(f);
        return SF_IMAGE_TOO_LARGE;
    }
    // libjpeg does not convert CMYK or YCCK to RGB; it gives CMYK and we convert.
    f->jpeg_cmyk = cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK;
    if (f->jpeg_cmyk) {
        cinfo->out_color_space = JCS_CMYK;
    } else {
        cinfo->out_color_space = cinfo->jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
    }
    jpeg_start_decompress(cinfo);
    // Adobe writes CMYK JPEGs inverted (0 = full ink) and marks them with an APP14 segment.
    f->jpeg_adobe = cinfo->saw_Adobe_marker;
    f->width = (int)cinfo->output_width;
    f->height = (int)cinfo->output_height;
    f->channels = f->jpeg_cmyk ? 3 : cinfo->output_components;
    if (f->channels != 1 && f->channels != 3) {
        set_message(msg, ms, "unsupported JPEG colour layout");
        jpeg_release(f);
        return SF_IMAGE_CORRUPT;
    }
    return SF_IMAGE_OK;
}

static sf_image_status jpeg_read(sf_frames *f, uint8_t *pixels, size_t stride, char *msg, size_t ms) {
    struct jpeg_decompress_struct *cinfo = f->jpeg;
    jpeg_quiet_error *err = f->jpeg_err;
    uint8_t *volatile cmyk_row = NULL;
    if (setjmp(err->jump)) {
        free(cmyk_row);
        set_message(msg, ms, err->message[0] ? err->message : "the JPEG data is invalid");
        sf_image_status status = err->ended_early ? SF_IMAGE_TRUNCATED : SF_IMAGE_CORRUPT;
        jpeg_release(f);
        return status;
    }
    if (f->jpeg_cmyk) {
        cmyk_row = malloc((size_t)cinfo->output_width * 4);
        if (!cmyk_row) {
            jpeg_release(f);
            return SF_IMAGE_NO_MEMORY;
        }
    }
    while (cinfo->output_scanline < cinfo->output_height) {
        size_t y = cinfo->output_scanline;
        JSAMPROW row = f->jpeg_cmyk ? cmyk_row : pixels + y * stride;
        if (jpeg_read_scanlines(cinfo, &row, 1) != 1) break;
        if (f->jpeg_cmyk) {
            uint8_t *out = pixels + y * stride;
            for (JDIMENSION x = 0; x < cinfo->output_width; x++) {
                unsigned c = cmyk_row[x * 4], m = cmyk_row[x * 4 + 1], yy = cmyk_row[x * 4 + 2],
                         k = cmyk_row[x * 4 + 3];
                if (!f->jpeg_adobe) {
                    c = 255 - c;
                    m = 255 - m;
                    yy = 255 - yy;
                    k = 255 - k;
                }
                out[x * 3] = (uint8_t)(c * k / 255);
                out[x * 3 + 1] = (uint8_t)(m * k / 255);
                out[x * 3 + 2] = (uint8_t)(yy * k / 255);
            }
        }
    }
    free(cmyk_row);
    cmyk_row = NULL;
    // libjpeg decodes a file that ends early as far as it goes and fills the rest with grey;
    // that is a truncated input, not an image. Other warnings (stray bytes between markers,
    // common in camera files) leave a usable image.
    int ended_early = err->ended_early || cinfo->output_scanline < cinfo->output_height;
    jpeg_abort_decompress(cinfo);
    jpeg_release(f);
    if (ended_early) {
        set_message(msg, ms, "the JPEG data ends early");
        return SF_IMAGE_TRUNCATED;
    }
    return SF_IMAGE_OK;
}

// ---------- PNG through libpng ----------

static void png_error_fn(png_structp png, png_const_charp text) {
    png_source *src = (png_source *)png_get_error_ptr(png);
    snprintf(src->error, sizeof src->error, "%s", text ? text : "PNG error");
    longjmp(src->jump, 1);
}

static void png_warning_fn(png_structp png, png_const_charp text) {
    (void)png;
    (void)text;  // warnings are not errors; a library never prints them
}

static void png_read_fn(png_structp png, png_bytep out, size_t count) {
    png_source *src = (png_source *)png_get_io_ptr(png);
    if (src->length - src->offset < count) {
        src->ran_out = 1;
        png_error(png, "the PNG data ends early");
    }
    memcpy(out, src->data + src->offset, count);
    src->offset += count;
}

static sf_image_status png_probe(const uint8_t *d, size_t n, int *w, int *h, char *msg, size_t ms) {
    // Signature (8), IHDR length (4), "IHDR" (4), width (4), height (4).
    if (n < 24 || memcmp(d + 12, "IHDR", 4) != 0) {
        set_message(msg, ms, n < 24 ? "the PNG data ends inside its header" : "the PNG has no IHDR chunk");
        return n < 24 ? SF_IMAGE_TRUNCATED : SF_IMAGE_CORRUPT;
    }
    uint32_t width = be32(d + 16), height = be32(d + 20);
    if (width == 0 || height == 0 || width > 0x7fffffff || height > 0x7fffffff) {
        set_message(msg, ms, "the PNG header gives an invalid size");
        return SF_IMAGE_CORRUPT;
    }
    *w = (int)width;
    *h = (int)height;
    return SF_IMAGE_OK;
}

static void png_release(sf_frames *f) {
    if (f->png) png_destroy_read_struct(&f->png, f->png_info ? &f->png_info : NULL, NULL);
    f->png = NULL;
    f->png_info = NULL;
}

static sf_image_status png_next(sf_frames *f, char *msg, size_t ms) {
    png_source *src = &f->png_src;
    memset(src, 0, sizeof *src);
    src->data = f->data;
    src->length = f->length;
    f->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, src, png_error_fn, png_warning_fn);
    if (!f->png) return SF_IMAGE_NO_MEMORY;
    f->png_info = png_create_info_struct(f->png);
    if (!f->png_info) {
        png_release(f);
        return SF_IMAGE_NO_MEMORY;
    }
    if (setjmp(src->jump)) {
        png_release(f);
        set_message(msg, ms, src->error[0] ? src->error : "the PNG data is invalid");
        return src->ran_out ? SF_IMAGE_TRUNCATED : SF_IMAGE_CORRUPT;
    }
    png_set_read_fn(f->png, src, png_read_fn);
    png_set_user_limits(f->png, 0x7fffffff, 0x7fffffff);
    png_set_crc_action(f->png, PNG_CRC_QUIET_USE, PNG_CRC_QUIET_USE);
    png_read_info(f->png, f->png_info);
    png_uint_32 width = png_get_image_width(f->png, f->png_info);
    png_uint_32 height = png_get_image_height(f->png, f->png_info);
    if (too_large(width, height, f->max_pixels, msg, ms)) {
        png_release(f);
        return SF_IMAGE_TOO_LARGE;
    }
    int color = png_get_color_type(f->png, f->png_info), depth = png_get_bit_depth(f->png, f->png_info);
    if (depth == 16) png_set_strip_16(f->png);
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(f->png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(f->png);
    if (png_get_valid(f->png, f->png_info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(f->png);
    if (color == PNG_COLOR_TYPE_GRAY_ALPHA ||
        (color == PNG_COLOR_TYPE_GRAY && png_get_valid(f->png, f->png_info, PNG_INFO_tRNS)))
        png_set_gray_to_rgb(f->png);
    png_set_interlace_handling(f->png);
    png_read_update_info(f->png, f->png_info);
    int channels = png_get_channels(f->png, f->png_info);
    size_t rowbytes = png_get_rowbytes(f->png, f->png_info);
    if (channels < 1 || channels > 4 || channels == 2 || rowbytes != (size_t)width * channels) {
        png_release(f);
        set_message(msg, ms, "unsupported PNG pixel layout");
        return SF_IMAGE_CORRUPT;
    }
    f->width = (int)width;
    f->height = (int)height;
    f->channels = channels;
    return SF_IMAGE_OK;
}

static sf_image_status png_read(sf_frames *f, uint8_t *pixels, size_t stride, char *msg, size_t ms) {
    png_source *src = &f->png_src;
    png_bytep *volatile rows = malloc(sizeof(png_bytep) * (size_t)f->height);
    if (!rows) {
        png_release(f);
        return SF_IMAGE_NO_MEMORY;
    }
    if (setjmp(src->jump)) {
        free(rows);
        png_release(f);
        set_message(msg, ms, src->error[0] ? src->error : "the PNG data is invalid");
        return src->ran_out ? SF_IMAGE_TRUNCATED : SF_IMAGE_CORRUPT;
    }
    for (int y = 0; y < f->height; y++) rows[y] = pixels + (size_t)y * stride;
    png_read_image(f->png, rows);
    free(rows);
    rows = NULL;
    png_release(f);
    return SF_IMAGE_OK;
}

// ---------- BMP ----------
// Leptonica reads only uncompressed BMPs; Windows and ImageMagick write 32-bit BI_BITFIELDS
// ones, and RLE ones come from old scanners. This reader covers 1/4/8-bit palette, RLE4 and
// RLE8, 16/24/32-bit and bit fields.

static int mask_shift(uint32_t mask) { int s = 0; if (!mask) return 0; while (!(mask & 1)) { mask >>= 1; s++; } return s; }
static int mask_bits(uint32_t mask) { int b = 0; mask >>= mask_shift(mask); while (mask & 1) { mask >>= 1; b++; } return b; }
static uint8_t mask_value(uint32_t v, uint32_t mask) {
    if (!mask) return 0;
    uint32_t x = (v & mask) >> mask_shift(mask);
    int bits = mask_bits(mask);
    if (bits >= 8) return (uint8_t)(x >> (bits - 8));
    return (uint8_t)((x * 255) / ((1u << bits) - 1));
}

static sf_image_status bmp_probe(const uint8_t *d, size_t n, int *w, int *h, char *msg, size_t ms) {
    if (n < 26) { set_message(msg, ms, "the BMP data ends inside its header"); return SF_IMAGE_TRUNCATED; }
    uint32_t header = le32(d + 14);
    int64_t width, height;
    if (header == 12) { width = le16(d + 18); height = le16(d + 20); }
    else if (header >= 40 && n >= 54) { width = (int32_t)le32(d + 18); height = (int32_t)le32(d + 22); }
    else { set_message(msg, ms, "the BMP header is unsupported or ends early"); return n < 54 ? SF_IMAGE_TRUNCATED : SF_IMAGE_CORRUPT; }
    if (height < 0) height = -height;
    if (width <= 0 || height <= 0 || width > 0x7fffffff || height > 0x7fffffff) {
        set_message(msg, ms, "the BMP header gives an invalid size");
        return SF_IMAGE_CORRUPT;
    }
    *w = (int)width;
    *h = (int)height;
    return SF_IMAGE_OK;
}

typedef struct {
    int bpp, top_down, channels;
    uint32_t compression, offset, colors;
    uint32_t rmask, gmask, bmask, amask;
    const uint8_t *palette;
    size_t row_bytes;
} bmp_layout;

static sf_image_status bmp_layout_of(const uint8_t *d, size_t n, int w, int h, bmp_layout *L, char *msg, size_t ms) {
    memset(L, 0, sizeof *L);
    uint32_t header = le32(d + 14);
    if (header < 40) { set_message(msg, ms, "OS/2 BMP files are not supported"); return SF_IMAGE_CORRUPT; }
    L->top_down = (int32_t)le32(d + 22) < 0;
    L->bpp = le16(d + 28);
    L->compression = le32(d + 30);
    L->offset = le32(d + 10);
    if (L->compression == 3 || L->compression == 6) {
        if (n < 14 + 40 + 12) { set_message(msg, ms, "the BMP data ends inside its header"); return SF_IMAGE_TRUNCATED; }
        L->rmask = le32(d + 54); L->gmask = le32(d + 58); L->bmask = le32(d + 62);
        if (L->compression == 6 || header >= 56) L->amask = n >= 70 ? le32(d + 66) : 0;
        if (L->bpp != 16 && L->bpp != 32) { set_message(msg, ms, "BMP bit fields need 16 or 32 bits per pixel"); return SF_IMAGE_CORRUPT; }
    } else if (L->compression == 1 || L->compression == 2) {
        if (L->bpp != (L->compression == 1 ? 8 : 4)) { set_message(msg, ms, "the BMP run-length encoding does not match its bit depth"); return SF_IMAGE_CORRUPT; }
        if (L->top_down) { set_message(msg, ms, "a run-length encoded BMP cannot be top-down"); return SF_IMAGE_CORRUPT; }
    } else if (L->compression != 0) {
        set_message(msg, ms, "JPEG or PNG compressed BMP files are not supported");
        return SF_IMAGE_CORRUPT;
    } else if (L->bpp == 16) { L->rmask = 0x7c00; L->gmask = 0x03e0; L->bmask = 0x001f; }
    else if (L->bpp == 32) { L->rmask = 0x00ff0000; L->gmask = 0x0000ff00; L->bmask = 0x000000ff; }
    if (!(L->bpp == 1 || L->bpp == 4 || L->bpp == 8 || L->bpp == 16 || L->bpp == 24 || L->bpp == 32)) {
        set_message(msg, ms, "the BMP bit depth is unsupported"); return SF_IMAGE_CORRUPT;
    }
    if (header > n - 14) { set_message(msg, ms, "the BMP header ends early"); return SF_IMAGE_TRUNCATED; }
    size_t palette_at = 14 + (size_t)header + ((L->compression == 3 && header == 40) ? 12 : 0);
    if (L->bpp <= 8) {
        L->colors = le32(d + 46);
        if (L->colors == 0 || L->colors > (1u << L->bpp)) L->colors = 1u << L->bpp;
        if (palette_at + (size_t)L->colors * 4 > n) { set_message(msg, ms, "the BMP palette ends early"); return SF_IMAGE_TRUNCATED; }
        L->palette = d + palette_at;
    }
    L->row_bytes = (((size_t)w * L->bpp + 31) / 32) * 4;
    if (L->offset > n) { set_message(msg, ms, "the BMP pixel data ends early"); return SF_IMAGE_TRUNCATED; }
    if ((L->compression == 0 || L->compression == 3 || L->compression == 6) && (n - L->offset) / L->row_bytes < (size_t)h) {
        set_message(msg, ms, "the BMP pixel data ends early");
        return SF_IMAGE_TRUNCATED;
    }
    L->channels = L->amask ? 4 : 3;
    return SF_IMAGE_OK;
}

static void bmp_put_index(const bmp_layout *L, uint8_t *dst, unsigned index) {
    if (index >= L->colors) index = 0;
    const uint8_t *c = L->palette + index * 4;
    dst[0] = c[2]; dst[1] = c[1]; dst[2] = c[0];
}

static sf_image_status bmp_read_rle(const uint8_t *d, size_t n, int w, int h, const bmp_layout *L, uint8_t *pixels, size_t stride, char *msg, size_t ms) {
    // Pixels a run never reaches keep the first palette colour.
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) bmp_put_index(L, pixels + (size_t)y * stride + (size_t)x * 3, 0);
    const uint8_t *p = d + L->offset, *end = d + n;
    int x = 0, y = 0;  // y counts rows from the bottom
    int four = L->compression == 2;
    while (1) {
        if (end - p < 2) { set_message(msg, ms, "the BMP run-length data ends early"); return SF_IMAGE_TRUNCATED; }
        unsigned count = p[0], value = p[1];
        p += 2;
        if (count > 0) {
            for (unsigned i = 0; i < count; i++, x++) {
                unsigned index = four ? ((i & 1) ? (value & 0x0f) : (value >> 4)) : value;
                if (x < w && y < h) bmp_put_index(L, pixels + (size_t)(h - 1 - y) * stride + (size_t)x * 3, index);
            }
        } else if (value == 0) {
            x = 0;
            y++;
        } else if (value == 1) {
            return SF_IMAGE_OK;
        } else if (value == 2) {
            if (end - p < 2) { set_message(msg, ms, "the BMP run-length data ends early"); return SF_IMAGE_TRUNCATED; }
            x += p[0];
            y += p[1];
            p += 2;
        } else {
            size_t bytes = four ? (value + 1) / 2 : value;
            size_t padded = (bytes + 1) & ~(size_t)1;
            if ((size_t)(end - p) < padded) { set_message(msg, ms, "the BMP run-length data ends early"); return SF_IMAGE_TRUNCATED; }
            for (unsigned i = 0; i < value; i++, x++) {
                unsigned index = four ? ((i & 1) ? (p[i / 2] & 0x0f) : (p[i / 2] >> 4)) : p[i];
                if (x < w && y < h) bmp_put_index(L, pixels + (size_t)(h - 1 - y) * stride + (size_t)x * 3, index);
            }
            p += padded;
        }
        if (y >= h) return SF_IMAGE_OK;  // past the last row: nothing more can be drawn
        if (x > w + 255) x = w + 255;    // keep the counter bounded on hostile runs
    }
}

static sf_image_status bmp_next(sf_frames *f, char *msg, size_t ms) {
    int w = 0, h = 0;
    sf_image_status st = bmp_probe(f->data, f->length, &w, &h, msg, ms);
    if (st != SF_IMAGE_OK) return st;
    if (too_large((uint64_t)w, (uint64_t)h, f->max_pixels, msg, ms)) return SF_IMAGE_TOO_LARGE;
    bmp_layout L;
    st = bmp_layout_of(f->data, f->length, w, h, &L, msg, ms);
    if (st != SF_IMAGE_OK) return st;
    f->width = w;
    f->height = h;
    f->channels = L.channels;
    return SF_IMAGE_OK;
}

static sf_image_status bmp_read(sf_frames *f, uint8_t *pixels, size_t stride, char *msg, size_t ms) {
    const uint8_t *d = f->data;
    int w = f->width, h = f->height;
    bmp_layout L;
    sf_image_status st = bmp_layout_of(d, f->length, w, h, &L, msg, ms);
    if (st != SF_IMAGE_OK) return st;
    if (L.compression == 1 || L.compression == 2) return bmp_read_rle(d, f->length, w, h, &L, pixels, stride, msg, ms);
    int channels = L.channels;
    for (int y = 0; y < h; y++) {
        const uint8_t *src = d + L.offset + (size_t)(L.top_down ? y : h - 1 - y) * L.row_bytes;
        uint8_t *dst = pixels + (size_t)y * stride;
        for (int x = 0; x < w; x++) {
            uint8_t r, g, b, a = 255;
            if (L.bpp <= 8) {
                size_t bitpos = (size_t)x * L.bpp;
                unsigned index = (src[bitpos / 8] >> (8 - L.bpp - bitpos % 8)) & ((1u << L.bpp) - 1);
                if (index >= L.colors) index = 0;
                const uint8_t *c = L.palette + index * 4;
                b = c[0]; g = c[1]; r = c[2];
            } else if (L.bpp == 24) {
                b = src[(size_t)x * 3]; g = src[(size_t)x * 3 + 1]; r = src[(size_t)x * 3 + 2];
            } else {
                uint32_t v = L.bpp == 16 ? le16(src + (size_t)x * 2) : le32(src + (size_t)x * 4);
                r = mask_value(v, L.rmask); g = mask_value(v, L.gmask); b = mask_value(v, L.bmask);
                if (L.amask) a = mask_value(v, L.amask);
            }
            dst[(size_t)x * channels] = r; dst[(size_t)x * channels + 1] = g; dst[(size_t)x * channels + 2] = b;
            if (channels == 4) dst[(size_t)x * channels + 3] = a;
        }
    }
    return SF_IMAGE_OK;
}

// ---------- TIFF through libtiff ----------

static tmsize_t mem_read(thandle_t h, void *buf, tmsize_t size) {
    mem_source *s = (mem_source *)h;
    if (size <= 0 || s->offset >= s->length) return 0;
    size_t n = s->length - (size_t)s->offset;
    if ((size_t)size < n) n = (size_t)size;
    memcpy(buf, s->data + s->offset, n);
    s->offset += n;
    return (tmsize_t)n;
}
static tmsize_t mem_write(thandle_t h, void *buf, tmsize_t size) { (void)h; (void)buf; (void)size; return -1; }
static toff_t mem_seek(thandle_t h, toff_t off, int whence) {
    mem_source *s = (mem_source *)h;
    uint64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? s->offset : s->length;
    if (off > UINT64_MAX - base) return (toff_t)-1;
    s->offset = base + off;
    return s->offset;
}
static int mem_close(thandle_t h) { (void)h; return 0; }
static toff_t mem_size(thandle_t h) { return ((mem_source *)h)->length; }
static int mem_map(thandle_t h, void **base, toff_t *size) { (void)h; (void)base; (void)size; return 0; }
static void mem_unmap(thandle_t h, void *base, toff_t size) { (void)h; (void)base; (void)size; }

static uint32_t tiff_u32(const uint8_t *p, int big) { return big ? be32(p) : le32(p); }
static uint16_t tiff_u16(const uint8_t *p, int big) { return big ? (uint16_t)((p[0] << 8) | p[1]) : le16(p); }

// The first page's size from the header and first directory alone, without libtiff (which
// wants the whole file): SF_IMAGE_TRUNCATED when the directory lies past `n`.
static sf_image_status tiff_probe(const uint8_t *d, size_t n, int *w, int *h, char *msg, size_t ms) {
    if (n < 8) { set_message(msg, ms, "the TIFF data ends inside its header"); return SF_IMAGE_TRUNCATED; }
    int big = d[0] == 'M';
    uint32_t ifd = tiff_u32(d + 4, big);
    if (ifd < 8) { set_message(msg, ms, "the TIFF header points to an invalid directory"); return SF_IMAGE_CORRUPT; }
    if ((uint64_t)ifd + 2 > n) { set_message(msg, ms, "the TIFF directory lies past the data read"); return SF_IMAGE_TRUNCATED; }
    uint32_t entries = tiff_u16(d + ifd, big);
    if ((uint64_t)ifd + 2 + (uint64_t)entries * 12 > n) { set_message(msg, ms, "the TIFF directory lies past the data read"); return SF_IMAGE_TRUNCATED; }
    uint32_t width = 0, height = 0;
    for (uint32_t i = 0; i < entries; i++) {
        const uint8_t *e = d + ifd + 2 + (size_t)i * 12;
        uint16_t tag = tiff_u16(e, big), type = tiff_u16(e + 2, big);
        uint32_t value = type == 3 ? tiff_u16(e + 8, big) : type == 4 ? tiff_u32(e + 8, big) : 0;
        if (tag == 256) width = value;
        if (tag == 257) height = value;
    }
    if (width == 0 || height == 0 || width > 0x7fffffff || height > 0x7fffffff) {
        set_message(msg, ms, "the TIFF directory gives no valid size");
        return SF_IMAGE_CORRUPT;
    }
    *w = (int)width;
    *h = (int)height;
    return SF_IMAGE_OK;
}

static sf_image_status tiff_open(sf_frames *f, char *msg, size_t ms) {
    tiff_error[0] = 0;
    f->tif_src.data = f->data;
    f->tif_src.length = f->length;
    f->tif_src.offset = 0;
    f->tif = TIFFClientOpen("image", "rm", (thandle_t)&f->tif_src, mem_read, mem_write, mem_seek,
                            mem_close, mem_size, mem_map, mem_unmap);
    if (!f->tif) {
        set_message(msg, ms, tiff_error[0] ? tiff_error : "the TIFF data is invalid");
        return SF_IMAGE_CORRUPT;
    }
    int count = 0;
    uint64_t largest = 0;
    do {
        uint32_t w = 0, h = 0;
        TIFFGetField(f->tif, TIFFTAG_IMAGEWIDTH, &w);
        TIFFGetField(f->tif, TIFFTAG_IMAGELENGTH, &h);
        if ((uint64_t)w * h > largest) largest = (uint64_t)w * h;
        count++;
    } while (count <= f->max_frames && TIFFReadDirectory(f->tif));
    f->count = count;
    f->largest = largest;
    if (!TIFFSetDirectory(f->tif, 0)) {
        set_message(msg, ms, tiff_error[0] ? tiff_error : "the TIFF directory is invalid");
        return SF_IMAGE_CORRUPT;
    }
    return SF_IMAGE_OK;
}

static sf_image_status tiff_next(sf_frames *f, char *msg, size_t ms) {
    tiff_error[0] = 0;
    if (f->index > 0 && (f->index >= f->count || !TIFFReadDirectory(f->tif))) return SF_IMAGE_END;
    uint32_t w = 0, h = 0;
    uint16_t photometric = 0, spp = 1, extra_count = 0;
    uint16_t *extra = NULL;
    TIFFGetField(f->tif, TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(f->tif, TIFFTAG_IMAGELENGTH, &h);
    if (w == 0 || h == 0 || w > 0x7fffffff || h > 0x7fffffff) {
        set_message(msg, ms, "the TIFF page gives an invalid size");
        return SF_IMAGE_CORRUPT;
    }
    if (too_large(w, h, f->max_pixels, msg, ms)) return SF_IMAGE_TOO_LARGE;
    char why[1024];
    if (!TIFFRGBAImageOK(f->tif, why)) {
        if (msg && ms) snprintf(msg, ms, "unsupported TIFF page: %s", why);
        return SF_IMAGE_CORRUPT;
    }
    TIFFGetFieldDefaulted(f->tif, TIFFTAG_PHOTOMETRIC, &photometric);
    TIFFGetFieldDefaulted(f->tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(f->tif, TIFFTAG_EXTRASAMPLES, &extra_count, &extra);
    uint16_t bps = 1, planar = PLANARCONFIG_CONTIG, orientation = ORIENTATION_TOPLEFT;
    TIFFGetFieldDefaulted(f->tif, TIFFTAG_BITSPERSAMPLE, &bps);
    TIFFGetFieldDefaulted(f->tif, TIFFTAG_PLANARCONFIG, &planar);
    TIFFGetFieldDefaulted(f->tif, TIFFTAG_ORIENTATION, &orientation);
    // The common layouts are read directly: fewer copies, and libtiff 4.5's RGBA interface
    // misplaces the pixels of partial edge tiles of grey images with alpha.
    f->tif_direct = bps == 8 && planar == PLANARCONFIG_CONTIG && orientation == ORIENTATION_TOPLEFT &&
                    ((photometric == PHOTOMETRIC_MINISBLACK && (spp == 1 || spp == 2)) ||
                     (photometric == PHOTOMETRIC_RGB && (spp == 3 || spp == 4)));
    int grey = (photometric == PHOTOMETRIC_MINISBLACK || photometric == PHOTOMETRIC_MINISWHITE) && spp == 1;
    f->width = (int)w;
    f->height = (int)h;
    if (f->tif_direct) {
        f->channels = spp == 1 ? 1 : spp == 3 ? 3 : 4;
    } else {
        f->channels = grey ? 1 : (extra_count > 0 ? 4 : 3);
    }
    return SF_IMAGE_OK;
}

// `count` pixels of `spp` 8-bit samples to the frame's channels (grey + alpha becomes RGBA).
static void tiff_copy_row(const uint8_t *src, uint8_t *dst, size_t count, int spp) {
    if (spp != 2) {
        memcpy(dst, src, count * (size_t)spp);
        return;
    }
    for (size_t x = 0; x < count; x++) {
        dst[x * 4] = dst[x * 4 + 1] = dst[x * 4 + 2] = src[x * 2];
        dst[x * 4 + 3] = src[x * 2 + 1];
    }
}

static sf_image_status tiff_read_direct(sf_frames *f, uint8_t *pixels, size_t stride, char *msg, size_t ms) {
    TIFF *tif = f->tif;
    uint16_t spp = 1;
    TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
    size_t w = (size_t)f->width, h = (size_t)f->height, channels = (size_t)f->channels;
    if (TIFFIsTiled(tif)) {
        uint32_t tw = 0, th = 0;
        TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw);
        TIFFGetField(tif, TIFFTAG_TILELENGTH, &th);
        tmsize_t size = TIFFTileSize(tif);
        if (tw == 0 || th == 0 || size <= 0 || (uint64_t)size < (uint64_t)tw * th * spp) {
            set_message(msg, ms, "the TIFF tile layout is invalid");
            return SF_IMAGE_CORRUPT;
        }
        uint8_t *tile = malloc((size_t)size);
        if (!tile) return SF_IMAGE_NO_MEMORY;
        for (size_t row = 0; row < h; row += th) {
            for (size_t col = 0; col < w; col += tw) {
                if (TIFFReadEncodedTile(tif, TIFFComputeTile(tif, (uint32_t)col, (uint32_t)row, 0, 0), tile, size) < 0) {
                    free(tile);
                    set_message(msg, ms, tiff_error[0] ? tiff_error : "a TIFF tile is truncated or corrupt");
                    return SF_IMAGE_CORRUPT;
                }
                size_t rows = h - row < th ? h - row : th, cols = w - col < tw ? w - col : tw;
                for (size_t y = 0; y < rows; y++)
                    tiff_copy_row(tile + y * tw * spp, pixels + (row + y) * stride + col * channels, cols, spp);
            }
        }
        free(tile);
        return SF_IMAGE_OK;
    }
    uint32_t rows_per_strip = 0;
    TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rows_per_strip);
    if (rows_per_strip == 0 || rows_per_strip > h) rows_per_strip = (uint32_t)h;
    tmsize_t size = TIFFStripSize(tif);
    if (size <= 0) {
        set_message(msg, ms, "the TIFF strip layout is invalid");
        return SF_IMAGE_CORRUPT;
    }
    uint8_t *strip = malloc((size_t)size);
    if (!strip) return SF_IMAGE_NO_MEMORY;
    for (size_t row = 0; row < h; row += rows_per_strip) {
        tmsize_t got = TIFFReadEncodedStrip(tif, TIFFComputeStrip(tif, (uint32_t)row, 0), strip, size);
        size_t rows = h - row < rows_per_strip ? h - row : rows_per_strip;
        if (got < 0 || (uint64_t)got < (uint64_t)rows * w * spp) {
            free(strip);
            set_message(msg, ms, tiff_error[0] ? tiff_error : "a TIFF strip is truncated or corrupt");
            return got < 0 ? SF_IMAGE_CORRUPT : SF_IMAGE_TRUNCATED;
        }
        for (size_t y = 0; y < rows; y++)
            tiff_copy_row(strip + y * w * spp, pixels + (row + y) * stride, w, spp);
    }
    free(strip);
    return SF_IMAGE_OK;
}

static sf_image_status tiff_read(sf_frames *f, uint8_t *pixels, size_t stride, char *msg, size_t ms) {
    tiff_error[0] = 0;
    if (f->tif_direct) return tiff_read_direct(f, pixels, stride, msg, ms);
    size_t count = (size_t)f->width * (size_t)f->height;
    uint32_t *raster = malloc(count * sizeof(uint32_t));
    if (!raster) return SF_IMAGE_NO_MEMORY;
    if (!TIFFReadRGBAImageOriented(f->tif, (uint32_t)f->width, (uint32_t)f->height, raster, ORIENTATION_TOPLEFT, 1)) {
        free(raster);
        set_message(msg, ms, tiff_error[0] ? tiff_error : "the TIFF page data is truncated or corrupt");
        return SF_IMAGE_CORRUPT;
    }
    for (int y = 0; y < f->height; y++) {
        const uint32_t *src = raster + (size_t)y * f->width;
        uint8_t *dst = pixels + (size_t)y * stride;
        for (int x = 0; x < f->width; x++) {
            uint32_t v = src[x];
            if (f->channels == 1) {
                dst[x] = (uint8_t)TIFFGetR(v);
            } else {
                dst[(size_t)x * f->channels] = (uint8_t)TIFFGetR(v);
                dst[(size_t)x * f->channels + 1] = (uint8_t)TIFFGetG(v);
                dst[(size_t)x * f->channels + 2] = (uint8_t)TIFFGetB(v);
                if (f->channels == 4) dst[(size_t)x * 4 + 3] = (uint8_t)TIFFGetA(v);
            }
        }
    }
    free(raster);
    return SF_IMAGE_OK;
}

// ---------- GIF through giflib ----------

static int gif_input(GifFileType *gif, GifByteType *out, int count) {
    mem_source *s = (mem_source *)gif->UserData;
    if (count <= 0 || s->offset >= s->length) return 0;
    size_t n = s->length - (size_t)s->offset;
    if ((size_t)count < n) n = (size_t)count;
    memcpy(out, s->data + s->offset, n);
    s->offset += n;
    return (int)n;
}

static GifFileType *gif_reopen(sf_frames *f) {
    if (f->gif) DGifCloseFile(f->gif, NULL);
    f->gif_src.data = f->data;
    f->gif_src.length = f->length;
    f->gif_src.offset = 0;
    int error = 0;
    f->gif = DGifOpen(&f->gif_src, gif_input, &error);
    return f->gif;
}

static sf_image_status gif_status(const GifFileType *gif, const char *fallback, char *msg, size_t ms) {
    int error = gif ? gif->Error : D_GIF_ERR_READ_FAILED;
    const char *text = GifErrorString(error);
    set_message(msg, ms, text ? text : fallback);
    if (error == D_GIF_ERR_READ_FAILED || error == D_GIF_ERR_EOF_TOO_SOON) return SF_IMAGE_TRUNCATED;
    if (error == D_GIF_ERR_NOT_ENOUGH_MEM) return SF_IMAGE_NO_MEMORY;
    return SF_IMAGE_CORRUPT;
}

static sf_image_status gif_skip_extension(GifFileType *gif, int *code, GifByteType **first) {
    GifByteType *block = NULL;
    if (DGifGetExtension(gif, code, &block) == GIF_ERROR) return SF_IMAGE_CORRUPT;
    if (first) *first = block;
    while (block) {
        if (DGifGetExtensionNext(gif, &block) == GIF_ERROR) return SF_IMAGE_CORRUPT;
    }
    return SF_IMAGE_OK;
}

static sf_image_status gif_open(sf_frames *f, char *msg, size_t ms) {
    if (!gif_reopen(f)) {
        set_message(msg, ms, "the GIF header is invalid or ends early");
        return f->length < 13 ? SF_IMAGE_TRUNCATED : SF_IMAGE_CORRUPT;
    }
    GifFileType *gif = f->gif;
    if (gif->SWidth <= 0 || gif->SHeight <= 0) {
        set_message(msg, ms, "the GIF header gives an invalid size");
        return SF_IMAGE_CORRUPT;
    }
    if (too_large((uint64_t)gif->SWidth, (uint64_t)gif->SHeight, f->max_pixels, msg, ms)) return SF_IMAGE_TOO_LARGE;
    // Count the frames by walking the records, skipping the compressed data undecoded.
    int count = 0;
    GifRecordType type = UNDEFINED_RECORD_TYPE;
    while (count <= f->max_frames) {
        if (DGifGetRecordType(gif, &type) == GIF_ERROR) break;
        if (type == TERMINATE_RECORD_TYPE) break;
        if (type == EXTENSION_RECORD_TYPE) {
            int code;
            if (gif_skip_extension(gif, &code, NULL) != SF_IMAGE_OK) break;
        } else if (type == IMAGE_DESC_RECORD_TYPE) {
            if (DGifGetImageDesc(gif) == GIF_ERROR) break;
            int size = 0;
            GifByteType *block = NULL;
            if (DGifGetCode(gif, &size, &block) == GIF_ERROR) break;
            int ok = 1;
            while (block) {
                if (DGifGetCodeNext(gif, &block) == GIF_ERROR) { ok = 0; break; }
            }
            if (!ok) break;
            count++;
        } else {
            break;
        }
    }
    if (count == 0) return gif_status(gif, "the GIF holds no image", msg, ms);
    f->count = count;
    f->largest = (uint64_t)gif->SWidth * gif->SHeight;
    if (!gif_reopen(f)) {
        set_message(msg, ms, "the GIF header is invalid");
        return SF_IMAGE_CORRUPT;
    }
    return SF_IMAGE_OK;
}

static sf_image_status gif_next(sf_frames *f, char *msg, size_t ms) {
    GifFileType *gif = f->gif;
    if (f->index >= f->count) return SF_IMAGE_END;
    int w = gif->SWidth, h = gif->SHeight;
    if (!f->canvas) {
        f->canvas = calloc((size_t)w * h, 4);  // transparent: shown over white
        if (!f->canvas) return SF_IMAGE_NO_MEMORY;
    } else if (f->gif_disposal == DISPOSE_BACKGROUND) {
        for (int y = f->gif_top; y < f->gif_top + f->gif_h && y < h; y++)
            for (int x = f->gif_left; x < f->gif_left + f->gif_w && x < w; x++)
                memset(f->canvas + ((size_t)y * w + x) * 4, 0, 4);
    }
    // DISPOSE_PREVIOUS is drawn as DISPOSE_DO_NOT: keeping a second canvas for it would
    // double the memory of every animation for a mode encoders rarely use.
    GraphicsControlBlock gcb = {DISPOSAL_UNSPECIFIED, false, 0, NO_TRANSPARENT_COLOR};
    GifRecordType type = UNDEFINED_RECORD_TYPE;
    while (1) {
        if (DGifGetRecordType(gif, &type) == GIF_ERROR) return gif_status(gif, "the GIF data is invalid", msg, ms);
        if (type == TERMINATE_RECORD_TYPE) return SF_IMAGE_END;
        if (type == EXTENSION_RECORD_TYPE) {
            int code = 0;
            GifByteType *block = NULL;
            if (DGifGetExtension(gif, &code, &block) == GIF_ERROR) return gif_status(gif, "the GIF data is invalid", msg, ms);
            if (code == GRAPHICS_EXT_FUNC_CODE && block && block[0] >= 4) DGifExtensionToGCB(block[0], block + 1, &gcb);
            while (block) {
                if (DGifGetExtensionNext(gif, &block) == GIF_ERROR) return gif_status(gif, "the GIF data is invalid", msg, ms);
            }
            continue;
        }
        if (type == IMAGE_DESC_RECORD_TYPE) break;
        set_message(msg, ms, "the GIF data holds an unknown record");
        return SF_IMAGE_CORRUPT;
    }
    if (DGifGetImageDesc(gif) == GIF_ERROR) return gif_status(gif, "the GIF frame header is invalid", msg, ms);
    GifImageDesc *desc = &gif->Image;
    if (desc->Width <= 0 || desc->Height <= 0) {
        set_message(msg, ms, "a GIF frame has an invalid size");
        return SF_IMAGE_CORRUPT;
    }
    if (too_large((uint64_t)desc->Width, (uint64_t)desc->Height, f->max_pixels, msg, ms)) return SF_IMAGE_TOO_LARGE;
    ColorMapObject *map = desc->ColorMap ? desc->ColorMap : gif->SColorMap;
    if (!map || !map->Colors || map->ColorCount <= 0) {
        set_message(msg, ms, "a GIF frame has no colour map");
        return SF_IMAGE_CORRUPT;
    }
    GifPixelType *line = malloc((size_t)desc->Width);
    if (!line) return SF_IMAGE_NO_MEMORY;
    static const int start[4] = {0, 4, 2, 1}, step[4] = {8, 8, 4, 2};
    int passes = desc->Interlace ? 4 : 1;
    for (int pass = 0; pass < passes; pass++) {
        int first = desc->Interlace ? start[pass] : 0, stride = desc->Interlace ? step[pass] : 1;
        for (int row = first; row < desc->Height; row += stride) {
            if (DGifGetLine(gif, line, desc->Width) == GIF_ERROR) {
                free(line);
                return gif_status(gif, "the GIF frame data is invalid", msg, ms);
            }
            int y = desc->Top + row;
            if (y < 0 || y >= h) continue;
            for (int col = 0; col < desc->Width; col++) {
                int x = desc->Left + col;
                if (x < 0 || x >= w) continue;
                int index = line[col];
                if (index == gcb.TransparentColor || index >= map->ColorCount) continue;
                uint8_t *p = f->canvas + ((size_t)y * w + x) * 4;
                p[0] = map->Colors[index].Red;
                p[1] = map->Colors[index].Green;
                p[2] = map->Colors[index].Blue;
                p[3] = 255;
            }
        }
    }
    free(line);
    f->gif_disposal = gcb.DisposalMode;
    f->gif_left = desc->Left;
    f->gif_top = desc->Top;
    f->gif_w = desc->Width;
    f->gif_h = desc->Height;
    f->width = w;
    f->height = h;
    f->channels = 4;
    return SF_IMAGE_OK;
}

static sf_image_status gif_read(sf_frames *f, uint8_t *pixels, size_t stride) {
    size_t row = (size_t)f->width * 4;
    for (int y = 0; y < f->height; y++) memcpy(pixels + (size_t)y * stride, f->canvas + (size_t)y * row, row);
    return SF_IMAGE_OK;
}

// ---------- WebP, PNM, JPEG 2000 through leptonica ----------

static sf_image_status pix_next(sf_frames *f, char *msg, size_t ms) {
    PIX *pix = pixReadMem(f->data, f->length);
    if (!pix) {
        set_message(msg, ms, "the image data is truncated or corrupt");
        return SF_IMAGE_CORRUPT;
    }
    if (too_large((uint64_t)pixGetWidth(pix), (uint64_t)pixGetHeight(pix), f->max_pixels, msg, ms)) {
        pixDestroy(&pix);
        return SF_IMAGE_TOO_LARGE;
    }
    PIX *p = pixGetColormap(pix) ? pixRemoveColormap(pix, REMOVE_CMAP_BASED_ON_SRC) : pixClone(pix);
    pixDestroy(&pix);
    if (!p) return SF_IMAGE_CORRUPT;
    int d = pixGetDepth(p);
    if (d == 16) {
        PIX *q = pixConvert16To8(p, L_MS_BYTE);
        pixDestroy(&p);
        p = q;
    } else if (d < 8 || (d != 8 && d != 32)) {
        PIX *q = pixConvertTo8(p, 0);
        pixDestroy(&p);
        p = q;
    }
    if (!p) {
        set_message(msg, ms, "the image could not be converted to 8-bit pixels");
        return SF_IMAGE_CORRUPT;
    }
    f->pix = p;
    f->width = pixGetWidth(p);
    f->height = pixGetHeight(p);
    f->channels = pixGetDepth(p) == 8 ? 1 : (pixGetSpp(p) == 4 ? 4 : 3);
    return SF_IMAGE_OK;
}

static sf_image_status pix_read(sf_frames *f, uint8_t *pixels, size_t stride) {
    l_uint32 *data = pixGetData(f->pix);
    int wpl = pixGetWpl(f->pix), channels = f->channels;
    for (int y = 0; y < f->height; y++) {
        l_uint32 *line = data + (size_t)y * wpl;
        uint8_t *row = pixels + (size_t)y * stride;
        if (channels == 1) {
            for (int x = 0; x < f->width; x++) row[x] = GET_DATA_BYTE(line, x);
        } else {
            for (int x = 0; x < f->width; x++) {
                l_uint32 v = line[x];
                row[(size_t)x * channels + 0] = (v >> L_RED_SHIFT) & 0xff;
                row[(size_t)x * channels + 1] = (v >> L_GREEN_SHIFT) & 0xff;
                row[(size_t)x * channels + 2] = (v >> L_BLUE_SHIFT) & 0xff;
                if (channels == 4) row[(size_t)x * channels + 3] = (v >> L_ALPHA_SHIFT) & 0xff;
            }
        }
    }
    pixDestroy(&f->pix);
    return SF_IMAGE_OK;
}

// ---------- entry points ----------

sf_image_status sf_image_probe(const uint8_t *data, size_t length, sf_image_format *format,
                               int *width, int *height, char *message, size_t message_size) {
    quiet();
    *width = 0;
    *height = 0;
    *format = SF_FORMAT_UNKNOWN;
    if (length == 0) {
        set_message(message, message_size, "the input is empty");
        return SF_IMAGE_EMPTY;
    }
    sf_image_format f = sf_image_sniff(data, length);
    *format = f;
    switch (f) {
    case SF_FORMAT_UNKNOWN:
        set_message(message, message_size, "not an image in a known format (PNG, JPEG, WebP, TIFF, GIF, PNM, BMP)");
        return SF_IMAGE_NOT_IMAGE;
    case SF_FORMAT_PNG: return png_probe(data, length, width, height, message, message_size);
    case SF_FORMAT_BMP: return bmp_probe(data, length, width, height, message, message_size);
    case SF_FORMAT_JPEG: return jpeg_probe(data, length, width, height, message, message_size);
    case SF_FORMAT_TIFF: return tiff_probe(data, length, width, height, message, message_size);
    case SF_FORMAT_GIF:
        if (length < 10) {
            set_message(message, message_size, "the GIF data ends inside its header");
            return SF_IMAGE_TRUNCATED;
        }
        *width = le16(data + 6);
        *height = le16(data + 8);
        if (*width == 0 || *height == 0) {
            set_message(message, message_size, "the GIF header gives an invalid size");
            return SF_IMAGE_CORRUPT;
        }
        return SF_IMAGE_OK;
    default: break;
    }
    l_int32 fmt = 0, w = 0, h = 0, bps = 0, spp = 0, iscmap = 0;
    if (pixReadHeaderMem(data, length, &fmt, &w, &h, &bps, &spp, &iscmap) != 0 || w <= 0 || h <= 0) {
        set_message(message, message_size, "the image header is unreadable or ends early");
        return length < 64 ? SF_IMAGE_TRUNCATED : SF_IMAGE_CORRUPT;
    }
    *width = w;
    *height = h;
    return SF_IMAGE_OK;
}

sf_image_status sf_frames_open(const uint8_t *data, size_t length, uint64_t max_pixels, int max_frames,
                               sf_frames **out, char *message, size_t message_size) {
    *out = NULL;
    sf_image_format format = SF_FORMAT_UNKNOWN;
    int w = 0, h = 0;
    sf_image_status status = sf_image_probe(data, length, &format, &w, &h, message, message_size);
    if (status != SF_IMAGE_OK) return status;
    if (too_large((uint64_t)w, (uint64_t)h, max_pixels, message, message_size)) return SF_IMAGE_TOO_LARGE;
    sf_frames *f = calloc(1, sizeof *f);
    if (!f) return SF_IMAGE_NO_MEMORY;
    f->data = data;
    f->length = length;
    f->max_pixels = max_pixels;
    f->max_frames = max_frames < 1 ? 1 : max_frames;
    f->format = format;
    f->count = 1;
    f->largest = (uint64_t)w * h;
    if (format == SF_FORMAT_TIFF) status = tiff_open(f, message, message_size);
    if (format == SF_FORMAT_GIF) status = gif_open(f, message, message_size);
    if (status != SF_IMAGE_OK) {
        sf_frames_close(f);
        return status;
    }
    *out = f;
    return SF_IMAGE_OK;
}

sf_image_format sf_frames_format(const sf_frames *f) { return f->format; }
int sf_frames_count(const sf_frames *f) { return f->count; }
uint64_t sf_frames_largest(const sf_frames *f) { return f->largest; }

sf_image_status sf_frames_next(sf_frames *f, int *width, int *height, int *channels,
                               char *message, size_t message_size) {
    *width = *height = *channels = 0;
    if (f->pending || f->index >= f->count) return SF_IMAGE_END;
    sf_image_status status;
    switch (f->format) {
    case SF_FORMAT_PNG: status = png_next(f, message, message_size); break;
    case SF_FORMAT_JPEG: status = jpeg_next(f, message, message_size); break;
    case SF_FORMAT_BMP: status = bmp_next(f, message, message_size); break;
    case SF_FORMAT_TIFF: status = tiff_next(f, message, message_size); break;
    case SF_FORMAT_GIF: status = gif_next(f, message, message_size); break;
    default: status = pix_next(f, message, message_size); break;
    }
    if (status != SF_IMAGE_OK) {
        // A frame that cannot be decoded ends the sequence: the decoder's position in the
        // data is unknown after it.
        f->index = f->count;
        return status;
    }
    f->index++;
    f->pending = 1;
    *width = f->width;
    *height = f->height;
    *channels = f->channels;
    return SF_IMAGE_OK;
}

sf_image_status sf_frames_read(sf_frames *f, uint8_t *pixels, size_t stride, char *message, size_t message_size) {
    if (!f->pending) return SF_IMAGE_END;
    f->pending = 0;
    sf_image_status status;
    switch (f->format) {
    case SF_FORMAT_PNG: status = png_read(f, pixels, stride, message, message_size); break;
    case SF_FORMAT_JPEG: status = jpeg_read(f, pixels, stride, message, message_size); break;
    case SF_FORMAT_BMP: status = bmp_read(f, pixels, stride, message, message_size); break;
    case SF_FORMAT_TIFF: status = tiff_read(f, pixels, stride, message, message_size); break;
    case SF_FORMAT_GIF: status = gif_read(f, pixels, stride); break;
    default: status = pix_read(f, pixels, stride); break;
    }
    if (status != SF_IMAGE_OK) f->index = f->count;
    return status;
}

void sf_frames_close(sf_frames *f) {
    if (!f) return;
    png_release(f);
    jpeg_release(f);
    if (f->tif) TIFFClose(f->tif);
    if (f->gif) DGifCloseFile(f->gif, NULL);
    free(f->canvas);
    if (f->pix) pixDestroy(&f->pix);
    free(f);
}

sf_image_status sf_image_decode(const uint8_t *data, size_t length, uint64_t max_pixels,
                                sf_image *out, char *message, size_t message_size) {
    memset(out, 0, sizeof *out);
    sf_frames *f = NULL;
    sf_image_status status = sf_frames_open(data, length, max_pixels, 1, &f, message, message_size);
    if (status != SF_IMAGE_OK) return status;
    int w = 0, h = 0, channels = 0;
    status = sf_frames_next(f, &w, &h, &channels, message, message_size);
    if (status == SF_IMAGE_END) {
        set_message(message, message_size, "the image holds no frame");
        status = SF_IMAGE_CORRUPT;
    }
    if (status != SF_IMAGE_OK) {
        sf_frames_close(f);
        return status;
    }
    size_t stride = (size_t)w * channels;
    uint8_t *pixels = malloc(stride * (size_t)h);
    if (!pixels) {
        sf_frames_close(f);
        return SF_IMAGE_NO_MEMORY;
    }
    status = sf_frames_read(f, pixels, stride, message, message_size);
    sf_frames_close(f);
    if (status != SF_IMAGE_OK) {
        free(pixels);
        return status;
    }
    out->width = w;
    out->height = h;
    out->channels = channels;
    out->stride = (int)stride;
    out->pixels = pixels;
    return SF_IMAGE_OK;
}

void sf_image_free(sf_image *image) {
    if (!image) return;
    free(image->pixels);
    image->pixels = NULL;
}

// ---------- PNG encoding through libpng (annotated images) ----------

typedef struct {
    jmp_buf jump;
    uint8_t *data;
    size_t length;
    size_t capacity;
    int out_of_memory;
    char error[160];
} png_sink;

static void png_encode_error_fn(png_structp png, png_const_charp text) {
    png_sink *sink = (png_sink *)png_get_error_ptr(png);
    snprintf(sink->error, sizeof sink->error, "%s", text ? text : "PNG error");
    longjmp(sink->jump, 1);
}

static void png_write_fn(png_structp png, png_bytep bytes, size_t count) {
    png_sink *sink = (png_sink *)png_get_io_ptr(png);
    if (sink->capacity - sink->length < count) {
        size_t want = sink->capacity ? sink->capacity : 65536;
        while (want - sink->length < count) {
            if (want > SIZE_MAX / 2) {
                sink->out_of_memory = 1;
                png_error(png, "the PNG does not fit in memory");
            }
            want *= 2;
        }
        uint8_t *grown = realloc(sink->data, want);
        if (!grown) {
            sink->out_of_memory = 1;
            png_error(png, "out of memory for the PNG");
        }
        sink->data = grown;
        sink->capacity = want;
    }
    memcpy(sink->data + sink->length, bytes, count);
    sink->length += count;
}

static void png_flush_fn(png_structp png) { (void)png; }

sf_image_status sf_png_encode(const uint8_t *pixels, int width, int height, int channels,
                              size_t stride, uint8_t **out, size_t *out_length, char *message,
                              size_t message_size) {
    *out = NULL;
    *out_length = 0;
    if (width <= 0 || height <= 0 || (channels != 1 && channels != 3 && channels != 4) ||
        stride < (size_t)width * (size_t)channels) {
        snprintf(message, message_size, "invalid pixels for a PNG");
        return SF_IMAGE_CORRUPT;
    }
    // Volatile: read after a longjmp back into this frame.
    png_sink *volatile sink = calloc(1, sizeof(png_sink));
    if (!sink) return SF_IMAGE_NO_MEMORY;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, sink, png_encode_error_fn,
                                              png_warning_fn);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        if (png) png_destroy_write_struct(&png, NULL);
        free(sink);
        return SF_IMAGE_NO_MEMORY;
    }
    if (setjmp(sink->jump)) {
        sf_image_status status = sink->out_of_memory ? SF_IMAGE_NO_MEMORY : SF_IMAGE_CORRUPT;
        snprintf(message, message_size, "%s", sink->error);
        png_destroy_write_struct(&png, &info);
        free(sink->data);
        free(sink);
        return status;
    }
    png_set_write_fn(png, sink, png_write_fn, png_flush_fn);
    int color = channels == 1 ? PNG_COLOR_TYPE_GRAY
                : channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_RGB_ALPHA;
    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8, color, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    // Fast compression: annotated pictures are for people to look at, written per input.
    png_set_compression_level(png, 3);
    png_write_info(png, info);
    for (int y = 0; y < height; y++) {
        png_write_row(png, (png_const_bytep)(pixels + (size_t)y * stride));
    }
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    *out = sink->data;
    *out_length = sink->length;
    free(sink);
    return SF_IMAGE_OK;
}
