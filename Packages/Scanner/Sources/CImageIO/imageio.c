// Image decoding that never writes to stderr. PNG goes through libpng directly with our own
// error and warning callbacks (leptonica installs none, so libpng would print); the other
// formats go through leptonica with its messages switched off.
#include "CImageIO.h"

#include <leptonica/allheaders.h>
#include <jpeglib.h>
#include <jerror.h>
#include <png.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static pthread_once_t quiet_once = PTHREAD_ONCE_INIT;
static void discard_message(const char *text) { (void)text; }
// Leptonica prints some messages (TIFF stream errors among them) through its stderr
// handler rather than its severity-filtered macros: silence both.
static void make_leptonica_quiet(void) {
    setMsgSeverity(L_SEVERITY_NONE);
    leptSetStderrHandler(discard_message);
}

// ---------- JPEG through libjpeg ----------
// libjpeg's default error manager prints warnings ("Premature end of JPEG file", "Corrupt
// JPEG data") to stderr; leptonica keeps it. Ours records the message and jumps back.

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
    int warnings;
    int ended_early;
} jpeg_quiet_error;

static void jpeg_error_exit_fn(j_common_ptr cinfo) {
    jpeg_quiet_error *err = (jpeg_quiet_error *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, err->message);
    longjmp(err->jump, 1);
}

static void jpeg_emit_fn(j_common_ptr cinfo, int level) {
    jpeg_quiet_error *err = (jpeg_quiet_error *)cinfo->err;
    if (level >= 0) return;
    err->warnings++;
    if (cinfo->err->msg_code == JWRN_JPEG_EOF) err->ended_early = 1;
}

static void jpeg_output_fn(j_common_ptr cinfo) { (void)cinfo; }

static sf_image_status jpeg_decode(const uint8_t *d, size_t n, int header_only, uint64_t max_pixels,
                                   int *w, int *h, sf_image *out, char *msg, size_t ms) {
    struct jpeg_decompress_struct cinfo;
    jpeg_quiet_error err;
    memset(&err, 0, sizeof err);
    cinfo.err = jpeg_std_error(&err.base);
    err.base.error_exit = jpeg_error_exit_fn;
    err.base.emit_message = jpeg_emit_fn;
    err.base.output_message = jpeg_output_fn;
    uint8_t *volatile pixels = NULL;
    if (setjmp(err.jump)) {
        free(pixels);
        jpeg_destroy_decompress(&cinfo);
        set_message(msg, ms, err.message[0] ? err.message : "the JPEG data is invalid");
        return err.ended_early ? SF_IMAGE_TRUNCATED : SF_IMAGE_CORRUPT;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, d, (unsigned long)n);
    jpeg_read_header(&cinfo, TRUE);
    *w = (int)cinfo.image_width;
    *h = (int)cinfo.image_height;
    if (header_only) {
        jpeg_destroy_decompress(&cinfo);
        return SF_IMAGE_OK;
    }
    if ((uint64_t)cinfo.image_width * cinfo.image_height > max_pixels) {
        jpeg_destroy_decompress(&cinfo);
        return SF_IMAGE_TOO_LARGE;
    }
    int grey = cinfo.jpeg_color_space == JCS_GRAYSCALE;
    cinfo.out_color_space = grey ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(&cinfo);
    int channels = cinfo.output_components;
    size_t stride = (size_t)cinfo.output_width * channels;
    pixels = malloc(stride * cinfo.output_height);
    if (!pixels) {
        jpeg_destroy_decompress(&cinfo);
        return SF_IMAGE_NO_MEMORY;
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = pixels + (size_t)cinfo.output_scanline * stride;
        if (jpeg_read_scanlines(&cinfo, &row, 1) != 1) break;
    }
    // libjpeg decodes a file that ends early as far as it goes and fills the rest with grey;
    // that is a truncated input, not an image. Other warnings (stray bytes between
    // markers, common in camera files) leave a usable image.
    int ended_early = err.ended_early;
    jpeg_abort_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    if (ended_early) {
        free(pixels);
        set_message(msg, ms, "the JPEG data ends early");
        return SF_IMAGE_TRUNCATED;
    }
    out->width = *w;
    out->height = *h;
    out->channels = channels;
    out->stride = (int)stride;
    out->pixels = pixels;
    return SF_IMAGE_OK;
}

// ---------- PNG through libpng ----------

typedef struct {
    jmp_buf jump;
    const uint8_t *data;
    size_t length;
    size_t offset;
    int ran_out;
    char error[160];
} png_source;

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

static uint32_t be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
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

static sf_image_status png_decode(const uint8_t *d, size_t n, sf_image *out, char *msg, size_t ms) {
    png_source src;
    memset(&src, 0, sizeof src);
    src.data = d;
    src.length = n;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_error_fn, png_warning_fn);
    if (!png) return SF_IMAGE_NO_MEMORY;
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return SF_IMAGE_NO_MEMORY;
    }
    // Volatile: modified between setjmp and longjmp.
    uint8_t *volatile pixels = NULL;
    png_bytep *volatile rows = NULL;
    if (setjmp(src.jump)) {
        free(pixels);
        free(rows);
        png_destroy_read_struct(&png, &info, NULL);
        set_message(msg, ms, src.error[0] ? src.error : "the PNG data is invalid");
        return src.ran_out ? SF_IMAGE_TRUNCATED : SF_IMAGE_CORRUPT;
    }
    png_set_read_fn(png, &src, png_read_fn);
    png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
    png_set_crc_action(png, PNG_CRC_QUIET_USE, PNG_CRC_QUIET_USE);
    png_read_info(png, info);
    png_uint_32 width = png_get_image_width(png, info), height = png_get_image_height(png, info);
    int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    if (depth == 16) png_set_strip_16(png);
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
    if (color == PNG_COLOR_TYPE_GRAY_ALPHA || (color == PNG_COLOR_TYPE_GRAY && png_get_valid(png, info, PNG_INFO_tRNS)))
        png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int channels = png_get_channels(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    if (channels < 1 || channels > 4 || channels == 2 || rowbytes != (size_t)width * channels) {
        snprintf(src.error, sizeof src.error, "unsupported PNG pixel layout");
        longjmp(src.jump, 1);
    }
    pixels = malloc(rowbytes * height);
    rows = malloc(sizeof(png_bytep) * height);
    if (!pixels || !rows) {
        snprintf(src.error, sizeof src.error, "out of memory for the PNG pixels");
        longjmp(src.jump, 1);
    }
    for (png_uint_32 y = 0; y < height; y++) rows[y] = pixels + y * rowbytes;
    png_read_image(png, rows);
    free(rows);
    rows = NULL;
    png_destroy_read_struct(&png, &info, NULL);
    out->width = (int)width;
    out->height = (int)height;
    out->channels = channels;
    out->stride = (int)rowbytes;
    out->pixels = pixels;
    return SF_IMAGE_OK;
}


// ---------- BMP ----------
// Leptonica reads only uncompressed BMPs; Windows and ImageMagick write 32-bit BI_BITFIELDS
// ones. This reader covers uncompressed 1/4/8-bit palette, 16/24/32-bit and bit fields.

static uint32_t le32(const uint8_t *p) { return p[0] | (p[1] << 8) | (p[2] << 16) | ((uint32_t)p[3] << 24); }
static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

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
    if (header == 12) { *w = le16(d + 18); *h = le16(d + 20); }
    else if (header >= 40 && n >= 54) { *w = (int32_t)le32(d + 18); *h = (int32_t)le32(d + 22); }
    else { set_message(msg, ms, "the BMP header is unsupported or ends early"); return n < 54 ? SF_IMAGE_TRUNCATED : SF_IMAGE_CORRUPT; }
    if (*h < 0) *h = -*h;
    if (*w <= 0 || *h <= 0) { set_message(msg, ms, "the BMP header gives an invalid size"); return SF_IMAGE_CORRUPT; }
    return SF_IMAGE_OK;
}

static sf_image_status bmp_decode(const uint8_t *d, size_t n, sf_image *out, char *msg, size_t ms) {
    int w = 0, h = 0;
    sf_image_status st = bmp_probe(d, n, &w, &h, msg, ms);
    if (st != SF_IMAGE_OK) return st;
    uint32_t header = le32(d + 14);
    if (header < 40) { set_message(msg, ms, "OS/2 BMP files are not supported"); return SF_IMAGE_CORRUPT; }
    int top_down = (int32_t)le32(d + 22) < 0;
    int bpp = le16(d + 28);
    uint32_t compression = le32(d + 30);
    uint32_t offset = le32(d + 10);
    uint32_t rmask = 0, gmask = 0, bmask = 0, amask = 0;
    if (compression == 3 || compression == 6) {
        if (n < 14 + 40 + 12) { set_message(msg, ms, "the BMP data ends inside its header"); return SF_IMAGE_TRUNCATED; }
        rmask = le32(d + 54); gmask = le32(d + 58); bmask = le32(d + 62);
        if (compression == 6 || header >= 56) amask = n >= 70 ? le32(d + 66) : 0;
    } else if (compression != 0) {
        set_message(msg, ms, "compressed (RLE, JPEG or PNG) BMP files are not supported");
        return SF_IMAGE_CORRUPT;
    } else if (bpp == 16) { rmask = 0x7c00; gmask = 0x03e0; bmask = 0x001f; }
    else if (bpp == 32) { rmask = 0x00ff0000; gmask = 0x0000ff00; bmask = 0x000000ff; }
    if (!(bpp == 1 || bpp == 4 || bpp == 8 || bpp == 16 || bpp == 24 || bpp == 32)) {
        set_message(msg, ms, "the BMP bit depth is unsupported"); return SF_IMAGE_CORRUPT;
    }
    const uint8_t *palette = d + 14 + header + ((compression == 3 && header == 40) ? 12 : 0);
    uint32_t colors = bpp <= 8 ? le32(d + 46) : 0;
    if (bpp <= 8 && (colors == 0 || colors > (1u << bpp))) colors = 1u << bpp;
    if (bpp <= 8 && (size_t)(palette - d) + colors * 4 > n) { set_message(msg, ms, "the BMP palette ends early"); return SF_IMAGE_TRUNCATED; }
    size_t row_bytes = (((size_t)w * bpp + 31) / 32) * 4;
    if (offset > n || (n - offset) / row_bytes < (size_t)h) { set_message(msg, ms, "the BMP pixel data ends early"); return SF_IMAGE_TRUNCATED; }
    int channels = amask ? 4 : 3;
    size_t stride = (size_t)w * channels;
    uint8_t *pixels = malloc(stride * (size_t)h);
    if (!pixels) return SF_IMAGE_NO_MEMORY;
    for (int y = 0; y < h; y++) {
        const uint8_t *src = d + offset + (size_t)(top_down ? y : h - 1 - y) * row_bytes;
        uint8_t *dst = pixels + (size_t)y * stride;
        for (int x = 0; x < w; x++) {
            uint8_t r, g, b, a = 255;
            if (bpp <= 8) {
                int bitpos = x * bpp;
                int index = (src[bitpos / 8] >> (8 - bpp - bitpos % 8)) & ((1 << bpp) - 1);
                if ((uint32_t)index >= colors) index = 0;
                const uint8_t *c = palette + index * 4;
                b = c[0]; g = c[1]; r = c[2];
            } else if (bpp == 24) {
                b = src[x * 3]; g = src[x * 3 + 1]; r = src[x * 3 + 2];
            } else {
                uint32_t v = bpp == 16 ? le16(src + x * 2) : le32(src + x * 4);
                r = mask_value(v, rmask); g = mask_value(v, gmask); b = mask_value(v, bmask);
                if (amask) a = mask_value(v, amask);
            }
            dst[x * channels] = r; dst[x * channels + 1] = g; dst[x * channels + 2] = b;
            if (channels == 4) dst[x * channels + 3] = a;
        }
    }
    out->width = w; out->height = h; out->channels = channels; out->stride = (int)stride; out->pixels = pixels;
    return SF_IMAGE_OK;
}

// ---------- everything else through leptonica ----------

static sf_image_status pix_to_image(PIX *pix, sf_image *out) {
    PIX *p = NULL;
    if (pixGetColormap(pix)) {
        p = pixRemoveColormap(pix, REMOVE_CMAP_BASED_ON_SRC);
    } else {
        p = pixClone(pix);
    }
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
    if (!p) return SF_IMAGE_CORRUPT;
    d = pixGetDepth(p);
    int w = pixGetWidth(p), h = pixGetHeight(p);
    int channels = d == 8 ? 1 : (pixGetSpp(p) == 4 ? 4 : 3);
    size_t stride = (size_t)w * channels;
    uint8_t *pixels = malloc(stride * (size_t)h);
    if (!pixels) {
        pixDestroy(&p);
        return SF_IMAGE_NO_MEMORY;
    }
    l_uint32 *data = pixGetData(p);
    int wpl = pixGetWpl(p);
    for (int y = 0; y < h; y++) {
        l_uint32 *line = data + (size_t)y * wpl;
        uint8_t *row = pixels + (size_t)y * stride;
        if (channels == 1) {
            for (int x = 0; x < w; x++) row[x] = GET_DATA_BYTE(line, x);
        } else {
            for (int x = 0; x < w; x++) {
                l_uint32 v = line[x];
                row[x * channels + 0] = (v >> L_RED_SHIFT) & 0xff;
                row[x * channels + 1] = (v >> L_GREEN_SHIFT) & 0xff;
                row[x * channels + 2] = (v >> L_BLUE_SHIFT) & 0xff;
                if (channels == 4) row[x * channels + 3] = (v >> L_ALPHA_SHIFT) & 0xff;
            }
        }
    }
    pixDestroy(&p);
    out->width = w;
    out->height = h;
    out->channels = channels;
    out->stride = (int)stride;
    out->pixels = pixels;
    return SF_IMAGE_OK;
}

// ---------- entry points ----------

sf_image_status sf_image_probe(const uint8_t *data, size_t length, sf_image_format *format,
                               int *width, int *height, char *message, size_t message_size) {
    pthread_once(&quiet_once, make_leptonica_quiet);
    *width = 0;
    *height = 0;
    if (length == 0) {
        set_message(message, message_size, "the input is empty");
        return SF_IMAGE_EMPTY;
    }
    sf_image_format f = sf_image_sniff(data, length);
    *format = f;
    if (f == SF_FORMAT_UNKNOWN) {
        set_message(message, message_size, "not an image in a known format (PNG, JPEG, WebP, TIFF, GIF, PNM, BMP)");
        return SF_IMAGE_NOT_IMAGE;
    }
    if (f == SF_FORMAT_PNG) return png_probe(data, length, width, height, message, message_size);
    if (f == SF_FORMAT_BMP) return bmp_probe(data, length, width, height, message, message_size);
    if (f == SF_FORMAT_JPEG)
        return jpeg_decode(data, length, 1, 0, width, height, NULL, message, message_size);
    l_int32 fmt = 0, w = 0, h = 0, bps = 0, spp = 0, iscmap = 0;
    if (pixReadHeaderMem(data, length, &fmt, &w, &h, &bps, &spp, &iscmap) != 0 || w <= 0 || h <= 0) {
        set_message(message, message_size, "the image header is unreadable or ends early");
        return length < 64 ? SF_IMAGE_TRUNCATED : SF_IMAGE_CORRUPT;
    }
    *width = w;
    *height = h;
    return SF_IMAGE_OK;
}

sf_image_status sf_image_decode(const uint8_t *data, size_t length, uint64_t max_pixels,
                                sf_image *out, char *message, size_t message_size) {
    memset(out, 0, sizeof *out);
    sf_image_format format = SF_FORMAT_UNKNOWN;
    int w = 0, h = 0;
    sf_image_status status = sf_image_probe(data, length, &format, &w, &h, message, message_size);
    if (status != SF_IMAGE_OK) return status;
    if ((uint64_t)w * (uint64_t)h > max_pixels) {
        if (message && message_size)
            snprintf(message, message_size, "the image is %d x %d pixels, more than the limit of %llu",
                     w, h, (unsigned long long)max_pixels);
        return SF_IMAGE_TOO_LARGE;
    }
    if (format == SF_FORMAT_PNG) return png_decode(data, length, out, message, message_size);
    if (format == SF_FORMAT_BMP) return bmp_decode(data, length, out, message, message_size);
    if (format == SF_FORMAT_JPEG) return jpeg_decode(data, length, 0, max_pixels, &w, &h, out, message, message_size);
    PIX *pix = pixReadMem(data, length);
    if (!pix) {
        set_message(message, message_size, "the image data is truncated or corrupt");
        return SF_IMAGE_CORRUPT;
    }
    status = pix_to_image(pix, out);
    pixDestroy(&pix);
    if (status != SF_IMAGE_OK) set_message(message, message_size, "the image could not be converted to 8-bit pixels");
    return status;
}

void sf_image_free(sf_image *image) {
    if (!image) return;
    free(image->pixels);
    image->pixels = NULL;
}
