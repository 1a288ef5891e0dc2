// Image decoding that never writes to stderr, frame by frame, into memory the caller owns.
//
// PNG and JPEG go through libpng and libjpeg directly with our own error and warning
// callbacks (both print otherwise) and stream rows straight into the caller's buffer, so a
// frame costs its pixels once. TIFF goes through libtiff's RGBA interface (strips and tiles,
// 1-16 bits, grey, palette, RGB, CMYK, YCbCr; every page), GIF through giflib (every frame,
// composited), BMP through our own reader (palette, 16/24/32-bit, bit fields, RLE4/RLE8),
// WebP, PNM and JPEG 2000 through leptonica with its messages switched off.
//
// This file: format sniffing, quieting the libraries, leptonica's formats and the entry
// points; imageio_png_jpeg.c and imageio_bmp_tiff_gif.c hold the other decoders.
#define _GNU_SOURCE
#include "imageio_internal.h"

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

// ---------- sf_quiet libraries ----------

static pthread_once_t quiet_once = PTHREAD_ONCE_INIT;
__thread char sf_tiff_error[160];

static void discard_message(const char *text) { (void)text; }

static void tiff_error_handler(const char *module, const char *format, va_list args) {
    (void)module;
    vsnprintf(sf_tiff_error, sizeof sf_tiff_error, format, args);
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

void sf_quiet(void) { pthread_once(&quiet_once, make_libraries_quiet); }

// ---------- WebP, PNM, JPEG 2000 through leptonica ----------

sf_image_status sf_pix_next(sf_frames *f, char *msg, size_t ms) {
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

sf_image_status sf_pix_read(sf_frames *f, uint8_t *pixels, size_t stride) {
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
    sf_quiet();
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
    case SF_FORMAT_PNG: return sf_png_probe(data, length, width, height, message, message_size);
    case SF_FORMAT_BMP: return sf_bmp_probe(data, length, width, height, message, message_size);
    case SF_FORMAT_JPEG: return sf_jpeg_probe(data, length, width, height, message, message_size);
    case SF_FORMAT_TIFF: return sf_tiff_probe(data, length, width, height, message, message_size);
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
    if (format == SF_FORMAT_TIFF) status = sf_tiff_open(f, message, message_size);
    if (format == SF_FORMAT_GIF) status = sf_gif_open(f, message, message_size);
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
    case SF_FORMAT_PNG: status = sf_png_next(f, message, message_size); break;
    case SF_FORMAT_JPEG: status = sf_jpeg_next(f, message, message_size); break;
    case SF_FORMAT_BMP: status = sf_bmp_next(f, message, message_size); break;
    case SF_FORMAT_TIFF: status = sf_tiff_next(f, message, message_size); break;
    case SF_FORMAT_GIF: status = sf_gif_next(f, message, message_size); break;
    default: status = sf_pix_next(f, message, message_size); break;
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
    case SF_FORMAT_PNG: status = sf_png_read(f, pixels, stride, message, message_size); break;
    case SF_FORMAT_JPEG: status = sf_jpeg_read(f, pixels, stride, message, message_size); break;
    case SF_FORMAT_BMP: status = sf_bmp_read(f, pixels, stride, message, message_size); break;
    case SF_FORMAT_TIFF: status = sf_tiff_read(f, pixels, stride, message, message_size); break;
    case SF_FORMAT_GIF: status = sf_gif_read(f, pixels, stride); break;
    default: status = sf_pix_read(f, pixels, stride); break;
    }
    if (status != SF_IMAGE_OK) f->index = f->count;
    return status;
}

void sf_frames_close(sf_frames *f) {
    if (!f) return;
    sf_png_release(f);
    sf_jpeg_release(f);
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
