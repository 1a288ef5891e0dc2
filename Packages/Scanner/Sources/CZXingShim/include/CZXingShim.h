// A small, self-contained C interface to ZXing-C++ for Scanner. Only shim.c includes
// ZXing's own headers, so neither its types nor zbar's meet in one translation unit.
#ifndef SHOPFLOOR_CZXINGSHIM_H
#define SHOPFLOOR_CZXINGSHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Symbologies, as bits (one request can name several).
enum {
    SFZ_QR = 1 << 0,
    SFZ_MICRO_QR = 1 << 1,
    SFZ_DATA_MATRIX = 1 << 2,
    SFZ_PDF417 = 1 << 3,
    SFZ_EAN13 = 1 << 4,
    SFZ_EAN8 = 1 << 5,
    SFZ_UPCA = 1 << 6,
    SFZ_UPCE = 1 << 7,
    SFZ_CODE128 = 1 << 8,
    SFZ_CODE39 = 1 << 9,
    SFZ_CODE93 = 1 << 10,
    SFZ_ITF = 1 << 11,
    SFZ_CODABAR = 1 << 12,
    SFZ_AZTEC = 1 << 13,
    SFZ_DATABAR = 1 << 14,
    SFZ_MAXICODE = 1 << 15,
};

/// Binarizers ZXing can use.
enum { SFZ_BIN_LOCAL_AVERAGE = 0, SFZ_BIN_GLOBAL_HISTOGRAM = 1, SFZ_BIN_FIXED_THRESHOLD = 2 };

/// One reading request.
typedef struct {
    uint32_t formats;  // SFZ_* bits; 0 means all of them
    int try_harder;
    int try_rotate;
    int try_invert;
    int try_downscale;
    int try_denoise;
    int binarizer;     // SFZ_BIN_*
    int is_pure;
    int max_symbols;   // 0: no limit
    int return_errors; // also report symbols found but not decoded (is_valid 0)
    int min_line_count; // 1D: scan lines that must agree; 0 keeps ZXing's default (2)
} sfz_options;

/// One symbol ZXing read. Strings and bytes are malloc'd, released by sfz_free.
typedef struct {
    uint32_t format;   // one SFZ_* bit, 0 for a symbology Scanner does not name
    char *text;        // UTF-8, plain text mode (GS1 separators as GS)
    uint8_t *bytes;
    int bytes_length;
    char symbology_identifier[8];
    int is_gs1;
    int has_eci;
    int is_inverted;
    int is_mirrored;
    int orientation;
    int points[8];     // x,y of top-left, top-right, bottom-right, bottom-left
    int is_valid;      // 0: located but not decoded (only with return_errors)
    int line_count;    // 1D: scan lines that read the symbol
} sfz_symbol;

/// Reads symbols from an 8-bit grey image. Returns 0 on success (possibly with no symbols)
/// and -1 on failure with a message. Never throws, never prints.
int sfz_read(const uint8_t *grey, int width, int height, int stride, const sfz_options *options,
             sfz_symbol **symbols, int *count, char *message, size_t message_size);

/// Frees what sfz_read returned.
void sfz_free(sfz_symbol *symbols, int count);

/// The ZXing-C++ version linked.
const char *sfz_version(void);

#ifdef __cplusplus
}
#endif
#endif
