// BMP (our reader), TIFF (libtiff) and GIF (giflib) decoding.
#define _GNU_SOURCE
#include "imageio_internal.h"

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

sf_image_status sf_bmp_probe(const uint8_t *d, size_t n, int *w, int *h, char *msg, size_t ms) {
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

sf_image_status sf_bmp_next(sf_frames *f, char *msg, size_t ms) {
    int w = 0, h = 0;
    sf_image_status st = sf_bmp_probe(f->data, f->length, &w, &h, msg, ms);
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

sf_image_status sf_bmp_read(sf_frames *f, uint8_t *pixels, size_t stride, char *msg, size_t ms) {
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

// Up to `want` bytes from the source's position into `out`; how many (0 at the end). libtiff's
// and giflib's read callbacks.
static size_t mem_take(mem_source *s, void *out, int64_t want) {
    if (want <= 0 || s->offset >= s->length) return 0;
    size_t n = s->length - (size_t)s->offset;
    if ((uint64_t)want < n) n = (size_t)want;
    memcpy(out, s->data + s->offset, n);
    s->offset += n;
    return n;
}

static tmsize_t mem_read(thandle_t h, void *buf, tmsize_t size) {
    return (tmsize_t)mem_take((mem_source *)h, buf, (int64_t)size);
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
sf_image_status sf_tiff_probe(const uint8_t *d, size_t n, int *w, int *h, char *msg, size_t ms) {
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

sf_image_status sf_tiff_open(sf_frames *f, char *msg, size_t ms) {
    sf_tiff_error[0] = 0;
    f->tif_src.data = f->data;
    f->tif_src.length = f->length;
    f->tif_src.offset = 0;
    f->tif = TIFFClientOpen("image", "rm", (thandle_t)&f->tif_src, mem_read, mem_write, mem_seek,
                            mem_close, mem_size, mem_map, mem_unmap);
    if (!f->tif) {
        set_message(msg, ms, sf_tiff_error[0] ? sf_tiff_error : "the TIFF data is invalid");
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
        set_message(msg, ms, sf_tiff_error[0] ? sf_tiff_error : "the TIFF directory is invalid");
        return SF_IMAGE_CORRUPT;
    }
    return SF_IMAGE_OK;
}

sf_image_status sf_tiff_next(sf_frames *f, char *msg, size_t ms) {
    sf_tiff_error[0] = 0;
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
                    set_message(msg, ms, sf_tiff_error[0] ? sf_tiff_error : "a TIFF tile is truncated or corrupt");
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
            set_message(msg, ms, sf_tiff_error[0] ? sf_tiff_error : "a TIFF strip is truncated or corrupt");
            return got < 0 ? SF_IMAGE_CORRUPT : SF_IMAGE_TRUNCATED;
        }
        for (size_t y = 0; y < rows; y++)
            tiff_copy_row(strip + y * w * spp, pixels + (row + y) * stride, w, spp);
    }
    free(strip);
    return SF_IMAGE_OK;
}

sf_image_status sf_tiff_read(sf_frames *f, uint8_t *pixels, size_t stride, char *msg, size_t ms) {
    sf_tiff_error[0] = 0;
    if (f->tif_direct) return tiff_read_direct(f, pixels, stride, msg, ms);
    size_t count = (size_t)f->width * (size_t)f->height;
    uint32_t *raster = malloc(count * sizeof(uint32_t));
    if (!raster) return SF_IMAGE_NO_MEMORY;
    if (!TIFFReadRGBAImageOriented(f->tif, (uint32_t)f->width, (uint32_t)f->height, raster, ORIENTATION_TOPLEFT, 1)) {
        free(raster);
        set_message(msg, ms, sf_tiff_error[0] ? sf_tiff_error : "the TIFF page data is truncated or corrupt");
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
    return (int)mem_take((mem_source *)gif->UserData, out, count);
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

sf_image_status sf_gif_open(sf_frames *f, char *msg, size_t ms) {
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

sf_image_status sf_gif_next(sf_frames *f, char *msg, size_t ms) {
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

sf_image_status sf_gif_read(sf_frames *f, uint8_t *pixels, size_t stride) {
    size_t row = (size_t)f->width * 4;
    for (int y = 0; y < f->height; y++) memcpy(pixels + (size_t)y * stride, f->canvas + (size_t)y * row, row);
    return SF_IMAGE_OK;
}
