// JPEG and PNG decoding through libjpeg and libpng, and PNG encoding (annotated images).
#define _GNU_SOURCE
#include "imageio_internal.h"

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

void sf_jpeg_release(sf_frames *f) {
    if (f->jpeg) {
        jpeg_destroy_decompress(f->jpeg);
        free(f->jpeg);
        f->jpeg = NULL;
    }
    free(f->jpeg_err);
    f->jpeg_err = NULL;
}

sf_image_status sf_jpeg_probe(const uint8_t *d, size_t n, int *w, int *h, char *msg, size_t ms) {
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

sf_image_status sf_jpeg_next(sf_frames *f, char *msg, size_t ms) {
    f->jpeg = calloc(1, sizeof *f->jpeg);
    f->jpeg_err = calloc(1, sizeof *f->jpeg_err);
    if (!f->jpeg || !f->jpeg_err) {
        sf_jpeg_release(f);
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
        sf_jpeg_release(f);
        return status;
    }
    jpeg_create_decompress(cinfo);
    jpeg_mem_src(cinfo, f->data, (unsigned long)f->length);
    jpeg_read_header(cinfo, TRUE);
    if (too_large(cinfo->image_width, cinfo->image_height, f->max_pixels, msg, ms)) {
        sf_jpeg_release(f);
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
        sf_jpeg_release(f);
        return SF_IMAGE_CORRUPT;
    }
    return SF_IMAGE_OK;
}

sf_image_status sf_jpeg_read(sf_frames *f, uint8_t *pixels, size_t stride, char *msg, size_t ms) {
    struct jpeg_decompress_struct *cinfo = f->jpeg;
    jpeg_quiet_error *err = f->jpeg_err;
    uint8_t *volatile cmyk_row = NULL;
    if (setjmp(err->jump)) {
        free(cmyk_row);
        set_message(msg, ms, err->message[0] ? err->message : "the JPEG data is invalid");
        sf_image_status status = err->ended_early ? SF_IMAGE_TRUNCATED : SF_IMAGE_CORRUPT;
        sf_jpeg_release(f);
        return status;
    }
    if (f->jpeg_cmyk) {
        cmyk_row = malloc((size_t)cinfo->output_width * 4);
        if (!cmyk_row) {
            sf_jpeg_release(f);
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
    sf_jpeg_release(f);
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

void sf_png_warning_fn(png_structp png, png_const_charp text) {
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

sf_image_status sf_png_probe(const uint8_t *d, size_t n, int *w, int *h, char *msg, size_t ms) {
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

void sf_png_release(sf_frames *f) {
    if (f->png) png_destroy_read_struct(&f->png, f->png_info ? &f->png_info : NULL, NULL);
    f->png = NULL;
    f->png_info = NULL;
}

sf_image_status sf_png_next(sf_frames *f, char *msg, size_t ms) {
    png_source *src = &f->png_src;
    memset(src, 0, sizeof *src);
    src->data = f->data;
    src->length = f->length;
    f->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, src, png_error_fn, sf_png_warning_fn);
    if (!f->png) return SF_IMAGE_NO_MEMORY;
    f->png_info = png_create_info_struct(f->png);
    if (!f->png_info) {
        sf_png_release(f);
        return SF_IMAGE_NO_MEMORY;
    }
    if (setjmp(src->jump)) {
        sf_png_release(f);
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
        sf_png_release(f);
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
        sf_png_release(f);
        set_message(msg, ms, "unsupported PNG pixel layout");
        return SF_IMAGE_CORRUPT;
    }
    f->width = (int)width;
    f->height = (int)height;
    f->channels = channels;
    return SF_IMAGE_OK;
}

sf_image_status sf_png_read(sf_frames *f, uint8_t *pixels, size_t stride, char *msg, size_t ms) {
    png_source *src = &f->png_src;
    png_bytep *volatile rows = malloc(sizeof(png_bytep) * (size_t)f->height);
    if (!rows) {
        sf_png_release(f);
        return SF_IMAGE_NO_MEMORY;
    }
    if (setjmp(src->jump)) {
        free(rows);
        sf_png_release(f);
        set_message(msg, ms, src->error[0] ? src->error : "the PNG data is invalid");
        return src->ran_out ? SF_IMAGE_TRUNCATED : SF_IMAGE_CORRUPT;
    }
    for (int y = 0; y < f->height; y++) rows[y] = pixels + (size_t)y * stride;
    png_read_image(f->png, rows);
    free(rows);
    rows = NULL;
    sf_png_release(f);
    return SF_IMAGE_OK;
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
                                              sf_png_warning_fn);
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
