#include <zlib.h>

// deflateInit2 and inflateInit2 are macros (they pass the version and struct size), which
// Swift cannot call: these wrappers can be.
static inline int czlib_deflate_init2(z_streamp stream, int level, int windowBits, int memLevel) {
    return deflateInit2(stream, level, Z_DEFLATED, windowBits, memLevel, Z_DEFAULT_STRATEGY);
}

static inline int czlib_inflate_init2(z_streamp stream, int windowBits) {
    return inflateInit2(stream, windowBits);
}
