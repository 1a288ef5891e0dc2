// ZXing-C++ through its C API (ZXing/ZXingC.h, which catches every C++ exception), mapped to
// the small interface in CZXingShim.h.
#include "CZXingShim.h"

#include <ZXing/ZXingC.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    uint32_t bit;
    ZXing_BarcodeFormat format;
} format_map[] = {
    {SFZ_QR, ZXing_BarcodeFormat_QRCode},
    {SFZ_MICRO_QR, ZXing_BarcodeFormat_MicroQRCode},
    {SFZ_DATA_MATRIX, ZXing_BarcodeFormat_DataMatrix},
    {SFZ_PDF417, ZXing_BarcodeFormat_PDF417},
    {SFZ_EAN13, ZXing_BarcodeFormat_EAN13},
    {SFZ_EAN8, ZXing_BarcodeFormat_EAN8},
    {SFZ_UPCA, ZXing_BarcodeFormat_UPCA},
    {SFZ_UPCE, ZXing_BarcodeFormat_UPCE},
    {SFZ_CODE128, ZXing_BarcodeFormat_Code128},
    {SFZ_CODE39, ZXing_BarcodeFormat_Code39},
    {SFZ_CODE93, ZXing_BarcodeFormat_Code93},
    {SFZ_ITF, ZXing_BarcodeFormat_ITF},
    {SFZ_CODABAR, ZXing_BarcodeFormat_Codabar},
    {SFZ_AZTEC, ZXing_BarcodeFormat_Aztec},
    {SFZ_DATABAR, ZXing_BarcodeFormat_DataBar},
    {SFZ_MAXICODE, ZXing_BarcodeFormat_MaxiCode},
};
#define FORMAT_COUNT (sizeof format_map / sizeof format_map[0])

static uint32_t bit_for(ZXing_BarcodeFormat format) {
    for (size_t i = 0; i < FORMAT_COUNT; i++)
        if (format_map[i].format == format) return format_map[i].bit;
    // Variants (Code39Ext, ITF14, DataBarExp, ...) map through their base symbology.
    ZXing_BarcodeFormat base = ZXing_BarcodeFormatSymbology(format);
    for (size_t i = 0; i < FORMAT_COUNT; i++)
        if (format_map[i].format == base) return format_map[i].bit;
    return 0;
}

static void set_message(char *message, size_t size, const char *text) {
    if (message && size) snprintf(message, size, "%s", text);
}

static void fail_with_last_error(char *message, size_t size, const char *fallback) {
    char *last = ZXing_LastErrorMsg();
    set_message(message, size, last ? last : fallback);
    ZXing_free(last);
}

int sfz_read(const uint8_t *grey, int width, int height, int stride, const sfz_options *o,
             sfz_symbol **symbols, int *count, char *message, size_t message_size) {
    *symbols = NULL;
    *count = 0;
    ZXing_ImageView *view = ZXing_ImageView_new_checked(grey, stride * height, width, height,
                                                        ZXing_ImageFormat_Lum, stride, 1);
    if (!view) {
        fail_with_last_error(message, message_size, "invalid image view");
        return -1;
    }
    ZXing_ReaderOptions *opts = ZXing_ReaderOptions_new();
    if (!opts) {
        ZXing_ImageView_delete(view);
        set_message(message, message_size, "out of memory");
        return -1;
    }
    ZXing_BarcodeFormat formats[FORMAT_COUNT];
    int n = 0;
    for (size_t i = 0; i < FORMAT_COUNT; i++)
        if (o->formats == 0 || (o->formats & format_map[i].bit)) formats[n++] = format_map[i].format;
    ZXing_ReaderOptions_setFormats(opts, formats, n);
    ZXing_ReaderOptions_setTryHarder(opts, o->try_harder != 0);
    ZXing_ReaderOptions_setTryRotate(opts, o->try_rotate != 0);
    ZXing_ReaderOptions_setTryInvert(opts, o->try_invert != 0);
    ZXing_ReaderOptions_setTryDownscale(opts, o->try_downscale != 0);
#ifdef ZXING_EXPERIMENTAL_API
    ZXing_ReaderOptions_setTryDenoise(opts, o->try_denoise != 0);
#endif
    ZXing_ReaderOptions_setIsPure(opts, o->is_pure != 0);
    ZXing_ReaderOptions_setTextMode(opts, ZXing_TextMode_Plain);
    ZXing_ReaderOptions_setEanAddOnSymbol(opts, ZXing_EanAddOnSymbol_Ignore);
    ZXing_ReaderOptions_setBinarizer(opts, o->binarizer == SFZ_BIN_GLOBAL_HISTOGRAM ? ZXing_Binarizer_GlobalHistogram
                                           : o->binarizer == SFZ_BIN_FIXED_THRESHOLD ? ZXing_Binarizer_FixedThreshold
                                                                                     : ZXing_Binarizer_LocalAverage);
    ZXing_ReaderOptions_setReturnErrors(opts, o->return_errors != 0);
    if (o->min_line_count > 0) ZXing_ReaderOptions_setMinLineCount(opts, o->min_line_count);
    if (o->max_symbols > 0) ZXing_ReaderOptions_setMaxNumberOfSymbols(opts, o->max_symbols > 255 ? 255 : o->max_symbols);

    ZXing_Barcodes *found = ZXing_ReadBarcodes(view, opts);
    ZXing_ReaderOptions_delete(opts);
    ZXing_ImageView_delete(view);
    if (!found) {
        fail_with_last_error(message, message_size, "ZXing could not read the image");
        return -1;
    }
    int size = ZXing_Barcodes_size(found);
    sfz_symbol *out = size > 0 ? calloc((size_t)size, sizeof *out) : NULL;
    if (size > 0 && !out) {
        ZXing_Barcodes_delete(found);
        set_message(message, message_size, "out of memory");
        return -1;
    }
    int kept = 0;
    for (int i = 0; i < size; i++) {
        const ZXing_Barcode *b = ZXing_Barcodes_at(found, i);
        if (!b) continue;
        int valid = ZXing_Barcode_isValid(b);
        if (!valid && !o->return_errors) continue;
        sfz_symbol *s = &out[kept];
        s->is_valid = valid;
        s->line_count = ZXing_Barcode_lineCount(b);
        s->format = bit_for(ZXing_Barcode_format(b));
        s->text = ZXing_Barcode_text(b);
        int length = 0;
        s->bytes = ZXing_Barcode_bytes(b, &length);
        s->bytes_length = s->bytes ? length : 0;
        char *identifier = ZXing_Barcode_symbologyIdentifier(b);
        if (identifier) snprintf(s->symbology_identifier, sizeof s->symbology_identifier, "%s", identifier);
        ZXing_free(identifier);
        s->is_gs1 = ZXing_Barcode_contentType(b) == ZXing_ContentType_GS1;
        s->has_eci = ZXing_Barcode_hasECI(b);
        s->is_inverted = ZXing_Barcode_isInverted(b);
        s->is_mirrored = ZXing_Barcode_isMirrored(b);
        s->orientation = ZXing_Barcode_orientation(b);
        ZXing_Position p = ZXing_Barcode_position(b);
        int pts[8] = {p.topLeft.x, p.topLeft.y, p.topRight.x, p.topRight.y,
                      p.bottomRight.x, p.bottomRight.y, p.bottomLeft.x, p.bottomLeft.y};
        memcpy(s->points, pts, sizeof pts);
        kept++;
    }
    ZXing_Barcodes_delete(found);
    *symbols = out;
    *count = kept;
    return 0;
}

void sfz_free(sfz_symbol *symbols, int count) {
    if (!symbols) return;
    for (int i = 0; i < count; i++) {
        ZXing_free(symbols[i].text);
        ZXing_free(symbols[i].bytes);
    }
    free(symbols);
}

const char *sfz_version(void) { return ZXing_Version(); }
