/*
 * Compiled writer of row texts: the records of a roofline as JSON or CSV text, from columns.
 *
 * A rendered profile is up to a few million cells, most of them float64 numbers written as
 * Python's repr writes them. Formatting them one Python object at a time costs a
 * microsecond each (CPython's shortest repr runs big-number arithmetic for most doubles), so
 * this writes whole rows in one pass: each row is a template of literal texts and cells read
 * from numpy columns (buffers), Python lists of str, or tables of pre-encoded texts indexed
 * by codes. The output is byte for byte what the pure-Python renderers write (json.dumps,
 * csv.writer; tests compare both):
 *
 *   - float64: float.__repr__, i.e. the shortest decimal that reads back as the same double
 *     (the closest such one), fixed notation for decimal exponents -4 < e <= 16, else
 *     d.ddde+XX; JSON writes NaN, Infinity and -Infinity, repr nan, inf and -inf. The shortest
 *     digits come from the Ryu algorithm (Ulf Adams, "Ryu: fast float-to-string conversion",
 *     PLDI 2018) with its 125-bit powers of five, computed here on first use;
 *   - integers (any width, signed or unsigned): decimal;
 *   - str: JSON strings as json.encoder.encode_basestring_ascii writes them, or CSV fields
 *     with every '"' doubled (csv.QUOTE_ALL);
 *   - bools and code tables: the texts given.
 *
 * Every read is checked against the length of its column. The GIL is let go while the rows
 * of a big piece are written (the cells' objects are held and read only: str values through
 * references taken first), so that two pieces are written at once in two threads; it is
 * taken back to grow the text and to raise an error.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#ifdef _WIN32
#include <io.h>
#define write(fd, data, size) _write((fd), (data), (unsigned int)(size))
#else
#include <unistd.h>
#endif

/* --- 64 x 64 -> 128-bit products --------------------------------------------------------- */

#if defined(__SIZEOF_INT128__)
typedef unsigned __int128 u128;
static inline uint64_t mul_high(uint64_t a, uint64_t b, uint64_t *low) {
    u128 p = (u128)a * b;
    *low = (uint64_t)p;
    return (uint64_t)(p >> 64);
}
#else
static inline uint64_t mul_high(uint64_t a, uint64_t b, uint64_t *low) {
    uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t middle = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
    *low = (middle << 32) | (uint32_t)p00;
    return p11 + (middle >> 32) + (p01 >> 32) + (p10 >> 32);
}
#endif

/* --- the powers of five (Ryu's DOUBLE_POW5_SPLIT and DOUBLE_POW5_INV_SPLIT) ------------------ */

#define POW5_BITS 125
#define POW5_COUNT 326     /* 5^i for the negative binary exponents */
#define POW5_INV_COUNT 342 /* 2^k / 5^i for the positive ones */
#define LIMBS 28           /* 32-bit limbs: 5^341 < 2^792, and twice that while dividing */

static uint64_t pow5[POW5_COUNT][2], pow5_inv[POW5_INV_COUNT][2]; /* [low, high] */
static int powers_ready = 0;

typedef struct {
    uint32_t limb[LIMBS]; /* little endian */
    int n;                /* limbs in use */
} Big;

static int big_bits(const Big *b) {
    int top = b->n - 1;
    while (top > 0 && b->limb[top] == 0) top--;
    int bits = 32 * top;
    for (uint32_t v = b->limb[top]; v; v >>= 1) bits++;
    return bits;
}

static int big_bit(const Big *b, int k) {
    return k / 32 < b->n ? (int)((b->limb[k / 32] >> (k % 32)) & 1) : 0;
}

static void big_shift_left_1(Big *b) {
    uint32_t carry = 0;
    for (int i = 0; i < b->n; i++) {
        uint32_t next = b->limb[i] >> 31;
        b->limb[i] = (b->limb[i] << 1) | carry;
        carry = next;
    }
    if (carry) b->limb[b->n++] = carry;
}

static int big_at_least(const Big *a, const Big *b) {
    int n = a->n > b->n ? a->n : b->n;
    for (int i = n - 1; i >= 0; i--) {
        uint32_t x = i < a->n ? a->limb[i] : 0, y = i < b->n ? b->limb[i] : 0;
        if (x != y) return x > y;
    }
    return 1;
}

static void big_subtract(Big *a, const Big *b) { /* a -= b, a >= b */
    int64_t borrow = 0;
    for (int i = 0; i < a->n; i++) {
        int64_t d = (int64_t)a->limb[i] - (i < b->n ? b->limb[i] : 0) - borrow;
        borrow = d < 0;
        a->limb[i] = (uint32_t)(d + (borrow << 32));
    }
    while (a->n > 1 && a->limb[a->n - 1] == 0) a->n--;
}

/* Bits [shift, shift + 128) of b (shift may be negative: b shifted left). */
static void big_window(const Big *b, int shift, uint64_t out[2]) {
    out[0] = out[1] = 0;
    for (int k = 0; k < 128; k++)
        if (shift + k >= 0 && big_bit(b, shift + k)) out[k / 64] |= (uint64_t)1 << (k % 64);
}

/* pow5[i]: the top 125 bits of 5^i; pow5_inv[i]: floor(2^(bits(5^i) - 1 + 125) / 5^i) + 1. */
static void compute_powers(void) {
    Big five = {{1}, 1};
    for (int i = 0; i < POW5_INV_COUNT; i++) {
        if (i > 0) {
            uint64_t carry = 0;
            for (int k = 0; k < five.n; k++) {
                uint64_t v = (uint64_t)five.limb[k] * 5 + carry;
                five.limb[k] = (uint32_t)v;
                carry = v >> 32;
            }
            if (carry) five.limb[five.n++] = (uint32_t)carry;
        }
        int bits = big_bits(&five);
        if (i < POW5_COUNT) big_window(&five, bits - POW5_BITS, pow5[i]);
        /* Long division of 2^(bits - 1 + 125) by 5^i, one quotient bit at a time: the
         * remainder starts as 2^(bits - 1) (the quotient's bits above 125 are its first). */
        Big rest = {{0}, (bits - 1) / 32 + 1};
        rest.limb[(bits - 1) / 32] = (uint32_t)1 << ((bits - 1) % 32);
        uint64_t q[2] = {0, 0};
        for (int k = POW5_BITS; k >= 0; k--) {
            if (k < POW5_BITS) big_shift_left_1(&rest);
            if (big_at_least(&rest, &five)) {
                big_subtract(&rest, &five);
                q[k / 64] |= (uint64_t)1 << (k % 64);
            }
        }
        q[0] += 1;
        q[1] += q[0] == 0;
        pow5_inv[i][0] = q[0];
        pow5_inv[i][1] = q[1];
    }
    powers_ready = 1;
}

/* --- shortest round-trip digits of a double (Ryu's d2d) ------------------------------------ */

static inline uint32_t pow5_bits(int32_t e) { return (uint32_t)(((e * 1217359) >> 19) + 1); }
static inline uint32_t log10_pow2(int32_t e) { return (uint32_t)((e * 78913) >> 18); }
static inline uint32_t log10_pow5(int32_t e) { return (uint32_t)((e * 732923) >> 20); }

static inline uint32_t pow5_factor(uint64_t value) {
    uint32_t count = 0;
    while (value % 5 == 0) {
        value /= 5;
        count++;
    }
    return count;
}

static inline int multiple_of_pow5(uint64_t value, uint32_t p) { return pow5_factor(value) >= p; }
static inline int multiple_of_pow2(uint64_t value, uint32_t p) {
    return p >= 64 ? value == 0 : (value & (((uint64_t)1 << p) - 1)) == 0;
}

/* (m * mul) >> j for the 128-bit mul, j >= 64. */
static inline uint64_t mul_shift(uint64_t m, const uint64_t mul[2], int32_t j) {
    uint64_t low0, low2;
    uint64_t high0 = mul_high(m, mul[0], &low0);
    uint64_t high2 = mul_high(m, mul[1], &low2);
    uint64_t low = low2 + high0;
    uint64_t high = high2 + (low < high0);
    int shift = j - 64;
    if (shift == 0) return low;
    if (shift >= 64) return high >> (shift - 64);
    return (high << (64 - shift)) | (low >> shift);
}

/* The shortest decimal digits (and the closest among them) of the positive finite double
 * with these IEEE fields: value = *digits * 10^*exponent. */
static void shortest(uint64_t ieee_mantissa, uint32_t ieee_exponent, uint64_t *digits,
                     int32_t *exponent) {
    int32_t e2;
    uint64_t m2;
    if (ieee_exponent == 0) {
        e2 = 1 - 1023 - 52 - 2; /* two more bits for the bounds */
        m2 = ieee_mantissa;
    } else {
        e2 = (int32_t)ieee_exponent - 1023 - 52 - 2;
        m2 = ((uint64_t)1 << 52) | ieee_mantissa;
    }
    const int accept_bounds = (m2 & 1) == 0;
    const uint64_t mv = 4 * m2;
    const uint32_t mm_shift = ieee_mantissa != 0 || ieee_exponent <= 1;
    uint64_t vr, vp, vm;
    int32_t e10;
    int vm_trailing_zeros = 0, vr_trailing_zeros = 0;
    if (e2 >= 0) {
        const uint32_t q = log10_pow2(e2) - (e2 > 3);
        e10 = (int32_t)q;
        const int32_t k = POW5_BITS + (int32_t)pow5_bits((int32_t)q) - 1;
        const int32_t i = -e2 + (int32_t)q + k;
        vr = mul_shift(4 * m2, pow5_inv[q], i);
        vp = mul_shift(4 * m2 + 2, pow5_inv[q], i);
        vm = mul_shift(4 * m2 - 1 - mm_shift, pow5_inv[q], i);
        if (q <= 21) {
            if (mv % 5 == 0)
                vr_trailing_zeros = multiple_of_pow5(mv, q);
            else if (accept_bounds)
                vm_trailing_zeros = multiple_of_pow5(mv - 1 - mm_shift, q);
            else
                vp -= multiple_of_pow5(mv + 2, q);
        }
    } else {
        const uint32_t q = log10_pow5(-e2) - (-e2 > 1);
        e10 = (int32_t)q + e2;
        const int32_t i = -e2 - (int32_t)q;
        const int32_t k = (int32_t)pow5_bits(i) - POW5_BITS;
        const int32_t j = (int32_t)q - k;
        vr = mul_shift(4 * m2, pow5[i], j);
        vp = mul_shift(4 * m2 + 2, pow5[i], j);
        vm = mul_shift(4 * m2 - 1 - mm_shift, pow5[i], j);
        if (q <= 1) {
            vr_trailing_zeros = 1;
            if (accept_bounds)
                vm_trailing_zeros = mm_shift == 1;
            else
                --vp;
        } else if (q < 63) {
            vr_trailing_zeros = multiple_of_pow2(mv, q);
        }
    }
    int32_t removed = 0;
    uint8_t last_removed = 0;
    uint64_t output;
    if (vm_trailing_zeros || vr_trailing_zeros) {
        for (;;) {
            if (vp / 10 <= vm / 10) break;
            vm_trailing_zeros &= vm % 10 == 0;
            vr_trailing_zeros &= last_removed == 0;
            last_removed = (uint8_t)(vr % 10);
            vr /= 10;
            vp /= 10;
            vm /= 10;
            removed++;
        }
        if (vm_trailing_zeros) {
            while (vm % 10 == 0) {
                vr_trailing_zeros &= last_removed == 0;
                last_removed = (uint8_t)(vr % 10);
                vr /= 10;
                vp /= 10;
                vm /= 10;
                removed++;
            }
        }
        if (vr_trailing_zeros && last_removed == 5 && vr % 2 == 0) last_removed = 4;
        output = vr + ((vr == vm && (!accept_bounds || !vm_trailing_zeros)) || last_removed >= 5);
    } else {
        int round_up = 0;
        if (vp / 100 > vm / 100) {
            round_up = vr % 100 >= 50;
            vr /= 100;
            vp /= 100;
            vm /= 100;
            removed += 2;
        }
        for (;;) {
            if (vp / 10 <= vm / 10) break;
            round_up = vr % 10 >= 5;
            vr /= 10;
            vp /= 10;
            vm /= 10;
            removed++;
        }
        output = vr + (vr == vm || round_up);
    }
    *digits = output;
    *exponent = e10 + removed;
}

/* --- writing numbers ------------------------------------------------------------------------ */

static const char DIGIT_PAIRS[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static const uint64_t POW10[20] = {
    1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u, 10000000u, 100000000u, 1000000000u,
    10000000000u, 100000000000u, 1000000000000u, 10000000000000u, 100000000000000u,
    1000000000000000u, 10000000000000000u, 100000000000000000u, 1000000000000000000u,
    10000000000000000000u};

static inline int decimal_length(uint64_t v) {
#if defined(__GNUC__) || defined(__clang__)
    const int bits = 64 - __builtin_clzll(v | 1);
    const int guess = (bits * 1233) >> 12; /* about bits * log10(2): the length or one less */
    return guess + ((v | 1) >= POW10[guess]); /* v | 1: 0 has one digit */
#else
    int n = 1;
    while (n < 20 && v >= POW10[n]) n++;
    return n;
#endif
}

/* The decimal digits of v, the last one just before `end`. */
static inline void write_digits(char *end, uint64_t v) {
    while (v >= 100000000) { /* eight digits at a time, in 32 bits */
        uint32_t chunk = (uint32_t)(v % 100000000);
        v /= 100000000;
        for (int k = 0; k < 4; k++) {
            const char *pair = DIGIT_PAIRS + 2 * (chunk % 100);
            chunk /= 100;
            *--end = pair[1];
            *--end = pair[0];
        }
    }
    uint32_t rest = (uint32_t)v;
    while (rest >= 100) {
        const char *pair = DIGIT_PAIRS + 2 * (rest % 100);
        rest /= 100;
        *--end = pair[1];
        *--end = pair[0];
    }
    if (rest >= 10) {
        *--end = DIGIT_PAIRS[2 * rest + 1];
        *--end = DIGIT_PAIRS[2 * rest];
    } else {
        *--end = (char)('0' + rest);
    }
}

/* The decimal digits of v at p (no sign); returns their count. */
static inline int write_unsigned(char *p, uint64_t v) {
    const int n = decimal_length(v);
    write_digits(p + n, v);
    return n;
}

#define MAX_DOUBLE_CHARS 32 /* "-1.2345678901234567e-308" and the like */

enum { FLOAT_JSON = 0, FLOAT_REPR = 1 };

/* repr(v) (or its JSON) at p; returns the characters written. */
static int write_double(char *p, double v, int form) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    const int negative = (int)(bits >> 63);
    const uint64_t ieee_mantissa = bits & (((uint64_t)1 << 52) - 1);
    const uint32_t ieee_exponent = (uint32_t)((bits >> 52) & 0x7ff);
    char *start = p;
    if (ieee_exponent == 0x7ff) {
        const char *text = ieee_mantissa ? (form == FLOAT_JSON ? "NaN" : "nan")
                           : negative    ? (form == FLOAT_JSON ? "-Infinity" : "-inf")
                                         : (form == FLOAT_JSON ? "Infinity" : "inf");
        size_t n = strlen(text);
        memcpy(p, text, n);
        return (int)n;
    }
    if (negative) *p++ = '-';
    if (ieee_exponent == 0 && ieee_mantissa == 0) {
        memcpy(p, "0.0", 3);
        return (int)(p + 3 - start);
    }
    /* Integers below 2^53 are their own shortest repr: digits and ".0". */
    const int32_t e = (int32_t)ieee_exponent - 1075;
    const uint64_t m2 = ((uint64_t)1 << 52) | ieee_mantissa;
    if (ieee_exponent != 0 && e <= 0 && e >= -52 && (m2 & (((uint64_t)1 << -e) - 1)) == 0) {
        p += write_unsigned(p, m2 >> -e);
        memcpy(p, ".0", 2);
        return (int)(p + 2 - start);
    }
    uint64_t digits;
    int32_t exponent;
    shortest(ieee_mantissa, ieee_exponent, &digits, &exponent);
    const int count = decimal_length(digits);
    const int point = exponent + count; /* CPython's decpt: value = 0.ddd x 10^point */
    if (point <= -4 || point > 16) {    /* d.ddde+XX */
        write_digits(p + count + 1, digits);
        p[0] = p[1];
        if (count > 1) {
            p[1] = '.';
            p += count + 1;
        } else {
            p += 1;
        }
        int power = point - 1;
        *p++ = 'e';
        *p++ = power < 0 ? '-' : '+';
        if (power < 0) power = -power;
        if (power < 10) *p++ = '0';
        p += write_unsigned(p, (uint64_t)power);
    } else if (point <= 0) { /* 0.000ddd */
        p[0] = '0';
        p[1] = '.';
        for (int k = 0; k < -point; k++) p[2 + k] = '0';
        p += 2 - point;
        write_digits(p + count, digits);
        p += count;
    } else if (point >= count) { /* ddd000.0 */
        write_digits(p + count, digits);
        p += count;
        for (int k = count; k < point; k++) *p++ = '0';
        p[0] = '.';
        p[1] = '0';
        p += 2;
    } else { /* ddd.ddd */
        write_digits(p + count + 1, digits);
        for (int k = 0; k < point; k++) p[k] = p[k + 1];
        p[point] = '.';
        p += count + 1;
    }
    return (int)(p - start);
}

/* --- the output text ------------------------------------------------------------------------ */

/* Text written into a str of one byte per character when it is all ASCII (grown in place and
 * handed over without a copy), else into a buffer of UTF-8 decoded at the end. */
typedef struct {
    int ascii;
    PyObject *str; /* ascii: the str being written */
    char *data;    /* its characters, or the UTF-8 buffer */
    Py_ssize_t length, capacity;
    PyThreadState *released; /* while the GIL is let go: this thread's state, else NULL */
} Out;

/* The GIL back (before anything touches Python objects or raises), if it was let go. */
static void out_hold_gil(Out *out) {
    if (out->released != NULL) {
        PyEval_RestoreThread(out->released);
        out->released = NULL;
    }
}

static void out_release_gil(Out *out) {
    if (out->released == NULL) out->released = PyEval_SaveThread();
}

static int out_init(Out *out, Py_ssize_t capacity, int ascii) {
    out->ascii = ascii;
    out->length = 0;
    out->capacity = capacity < 64 ? 64 : capacity;
    out->str = NULL;
    out->data = NULL;
    out->released = NULL;
    if (ascii) {
        out->str = PyUnicode_New(out->capacity, 127);
        if (out->str == NULL) return -1;
        out->data = (char *)PyUnicode_1BYTE_DATA(out->str);
    } else {
        out->data = PyMem_Malloc((size_t)out->capacity);
        if (out->data == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    }
    return 0;
}

/* Grows the text, with the GIL (given back after, unless there is an error to raise). */
static int out_resize(Out *out, Py_ssize_t capacity) {
    const int was_released = out->released != NULL;
    out_hold_gil(out);
    if (out->ascii) {
        if (PyUnicode_Resize(&out->str, capacity) < 0) return -1;
        out->data = (char *)PyUnicode_1BYTE_DATA(out->str);
    } else {
        char *data = PyMem_Realloc(out->data, (size_t)(capacity > 0 ? capacity : 1));
        if (data == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        out->data = data;
    }
    out->capacity = capacity;
    if (was_released) out_release_gil(out);
    return 0;
}

/* Room for `more` characters; -1 with a Python error set when there is none. */
static inline int out_reserve(Out *out, Py_ssize_t more) {
    if (out->length + more <= out->capacity) return 0;
    Py_ssize_t wanted = out->capacity + out->capacity / 2;
    if (wanted < out->length + more) wanted = out->length + more;
    return out_resize(out, wanted);
}

static inline int out_write(Out *out, const char *text, Py_ssize_t n) {
    if (out_reserve(out, n) < 0) return -1;
    char *p = out->data + out->length;
    if (n <= 16)
        for (Py_ssize_t i = 0; i < n; i++) p[i] = text[i];
    else
        memcpy(p, text, (size_t)n);
    out->length += n;
    return 0;
}

static PyObject *out_finish(Out *out) {
    if (out->ascii) {
        if (PyUnicode_Resize(&out->str, out->length) < 0) return NULL;
        PyObject *str = out->str;
        out->str = NULL;
        out->data = NULL;
        return str;
    }
    PyObject *str = PyUnicode_DecodeUTF8(out->data, out->length, "strict");
    PyMem_Free(out->data);
    out->data = NULL;
    return str;
}

static void out_clear(Out *out) {
    out_hold_gil(out);
    if (out->ascii)
        Py_CLEAR(out->str);
    else if (out->data != NULL)
        PyMem_Free(out->data);
    out->data = NULL;
}

/* --- writing strings ------------------------------------------------------------------------ */

static const char HEX[] = "0123456789abcdef";

/* A JSON string as json.encoder.encode_basestring_ascii writes it. */
static int write_json_string(Out *out, PyObject *text) {
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (out_reserve(out, 2 + 12 * n) < 0) return -1; /* \udXXX\udXXX at most per character */
    char *p = out->data + out->length;
    *p++ = '"';
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= ' ' && c <= '~' && c != '\\' && c != '"') {
            *p++ = (char)c;
            continue;
        }
        *p++ = '\\';
        switch (c) {
        case '\\':
        case '"':
            *p++ = (char)c;
            break;
        case '\b':
            *p++ = 'b';
            break;
        case '\f':
            *p++ = 'f';
            break;
        case '\n':
            *p++ = 'n';
            break;
        case '\r':
            *p++ = 'r';
            break;
        case '\t':
            *p++ = 't';
            break;
        default:
            if (c >= 0x10000) {
                Py_UCS4 high = 0xd800 | ((c - 0x10000) >> 10);
                *p++ = 'u';
                *p++ = HEX[(high >> 12) & 0xf];
                *p++ = HEX[(high >> 8) & 0xf];
                *p++ = HEX[(high >> 4) & 0xf];
                *p++ = HEX[high & 0xf];
                *p++ = '\\';
                c = 0xdc00 | ((c - 0x10000) & 0x3ff);
            }
            *p++ = 'u';
            *p++ = HEX[(c >> 12) & 0xf];
            *p++ = HEX[(c >> 8) & 0xf];
            *p++ = HEX[(c >> 4) & 0xf];
            *p++ = HEX[c & 0xf];
        }
    }
    *p++ = '"';
    out->length = p - out->data;
    return 0;
}

/* A field of csv.QUOTE_ALL without its quotes: the text, every '"' doubled (UTF-8). */
static int write_csv_string(Out *out, PyObject *text) {
    Py_ssize_t n;
    /* Its UTF-8 was made (and kept in the str) by parse_field, with the GIL: read only here. */
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &n);
    if (utf8 == NULL) {
        out_hold_gil(out);
        return -1;
    }
    if (out_reserve(out, 2 * n) < 0) return -1;
    char *p = out->data + out->length;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (utf8[i] == '"') *p++ = '"';
        *p++ = utf8[i];
    }
    out->length = p - out->data;
    return 0;
}

/* --- rows ----------------------------------------------------------------------------------- */

enum { KIND_FLOAT = 1, KIND_INT = 2, KIND_BOOL = 3, KIND_TABLE = 4, KIND_STR = 5 };
enum { STR_JSON = 0, STR_CSV = 1 };
enum { INT_PLAIN = 0, INT_QUOTED = 1 };

typedef struct {
    const char *literal;
    Py_ssize_t literal_length;
    int kind, form;
    Py_buffer values, mask;      /* .obj NULL when unused */
    int item_size, item_signed;  /* integer columns and codes */
    PyObject **strings;          /* KIND_STR: the list's items start..count-1, held */
    Py_ssize_t first, held;      /* KIND_STR: strings[i - first] is item i; references */
    PyObject *texts;             /* KIND_TABLE, KIND_BOOL: a sequence of bytes */
    Py_ssize_t text_count;
} Field;

static void field_clear(Field *f) {
    for (Py_ssize_t i = 0; i < f->held; i++) Py_DECREF(f->strings[i]);
    PyMem_Free(f->strings);
    f->strings = NULL;
    f->held = 0;
    if (f->values.obj != NULL) PyBuffer_Release(&f->values);
    if (f->mask.obj != NULL) PyBuffer_Release(&f->mask);
    Py_CLEAR(f->texts);
}

/* A 1-d buffer of at least `count` items of a numpy/struct format in `formats`. */
static int get_column(PyObject *obj, Py_buffer *view, const char *formats, Py_ssize_t count,
                      const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return -1;
    const char *format = view->format != NULL ? view->format : "B";
    if (format[0] == '<' || format[0] == '=' || format[0] == '@') format++;
    if (view->ndim != 1 || strlen(format) != 1 || strchr(formats, format[0]) == NULL ||
        view->shape[0] < count) {
        PyErr_Format(PyExc_ValueError, "%s: expected a 1-d column of %zd items of format %s",
                     what, count, formats);
        PyBuffer_Release(view);
        view->obj = NULL;
        return -1;
    }
    return 0;
}

static inline uint64_t read_integer(const Field *f, Py_ssize_t i, int *negative) {
    const char *p = (const char *)f->values.buf + i * f->item_size;
    int64_t s = 0;
    uint64_t u = 0;
    switch (f->item_size) {
    case 1:
        if (f->item_signed) s = *(const int8_t *)p; else u = *(const uint8_t *)p;
        break;
    case 2:
        if (f->item_signed) s = *(const int16_t *)p; else u = *(const uint16_t *)p;
        break;
    case 4:
        if (f->item_signed) s = *(const int32_t *)p; else u = *(const uint32_t *)p;
        break;
    default:
        if (f->item_signed) s = *(const int64_t *)p; else u = *(const uint64_t *)p;
    }
    if (!f->item_signed) {
        *negative = 0;
        return u;
    }
    *negative = s < 0;
    return s < 0 ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
}

static int parse_field(PyObject *spec, Field *f, Py_ssize_t start, Py_ssize_t count,
                       int *ascii) {
    PyObject *literal, *values, *extra, *mask;
    memset(f, 0, sizeof *f);
    if (!PyTuple_Check(spec) ||
        !PyArg_ParseTuple(spec, "SiOOO", &literal, &f->kind, &values, &extra, &mask)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "a field is (literal, kind, values, extra, mask)");
        return -1;
    }
    f->literal = PyBytes_AS_STRING(literal);
    f->literal_length = PyBytes_GET_SIZE(literal);
    for (Py_ssize_t i = 0; i < f->literal_length; i++)
        if ((unsigned char)f->literal[i] >= 0x80) *ascii = 0;
    if (mask != Py_None && get_column(mask, &f->mask, "?", count, "mask") < 0) return -1;
    switch (f->kind) {
    case KIND_FLOAT:
        f->form = PyLong_AsLong(extra) == FLOAT_REPR ? FLOAT_REPR : FLOAT_JSON;
        if (PyErr_Occurred()) return -1;
        return get_column(values, &f->values, "d", count, "float column");
    case KIND_INT:
    case KIND_TABLE:
        if (f->kind == KIND_INT) {
            f->form = extra != Py_None && PyObject_IsTrue(extra) == 1 ? INT_QUOTED : INT_PLAIN;
            if (PyErr_Occurred()) return -1;
        }
        if (get_column(values, &f->values, "bhilqBHILQ", count, "integer column") < 0)
            return -1;
        f->item_size = (int)f->values.itemsize;
        f->item_signed = strchr("bhilq", f->values.format[strlen(f->values.format) - 1]) != NULL;
        if (f->item_size != 1 && f->item_size != 2 && f->item_size != 4 && f->item_size != 8) {
            PyErr_SetString(PyExc_ValueError, "integer column: unsupported item size");
            return -1;
        }
        if (f->kind == KIND_INT) return 0;
        break;
    case KIND_BOOL:
        if (get_column(values, &f->values, "?", count, "bool column") < 0) return -1;
        break;
    case KIND_STR:
        if (!PyList_Check(values) || PyList_GET_SIZE(values) < count) {
            PyErr_SetString(PyExc_ValueError, "str column: expected a long enough list");
            return -1;
        }
        f->form = PyLong_AsLong(extra) == STR_CSV ? STR_CSV : STR_JSON;
        if (PyErr_Occurred()) return -1;
        f->first = start;
        f->strings = PyMem_Malloc((size_t)(count - start + 1) * sizeof *f->strings);
        if (f->strings == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = start; i < count; i++) {
            PyObject *item = PyList_GET_ITEM(values, i);
            if (!PyUnicode_Check(item)) {
                PyErr_Format(PyExc_TypeError, "str column: item %zd is not a str", i);
                return -1;
            }
            if (f->form == STR_CSV) {
                if (!PyUnicode_IS_ASCII(item)) *ascii = 0;
                if (PyUnicode_AsUTF8AndSize(item, NULL) == NULL) return -1;
            }
            Py_INCREF(item);
            f->strings[f->held++] = item;
        }
        return 0;
    default:
        PyErr_Format(PyExc_ValueError, "unknown field kind %d", f->kind);
        return -1;
    }
    /* KIND_TABLE and KIND_BOOL: texts (bytes) indexed by codes, or (true, false). */
    f->texts = PySequence_Tuple(extra);
    if (f->texts == NULL) return -1;
    f->text_count = PyTuple_GET_SIZE(f->texts);
    if (f->kind == KIND_BOOL && f->text_count != 2) {
        PyErr_SetString(PyExc_ValueError, "bool column: expected (true text, false text)");
        return -1;
    }
    for (Py_ssize_t i = 0; i < f->text_count; i++) {
        PyObject *text = PyTuple_GET_ITEM(f->texts, i);
        if (!PyBytes_Check(text)) {
            PyErr_SetString(PyExc_TypeError, "texts must be bytes");
            return -1;
        }
        for (Py_ssize_t k = 0; k < PyBytes_GET_SIZE(text); k++)
            if ((unsigned char)PyBytes_AS_STRING(text)[k] >= 0x80) *ascii = 0;
    }
    return 0;
}

static int write_text(Out *out, PyObject *bytes) {
    return out_write(out, PyBytes_AS_STRING(bytes), PyBytes_GET_SIZE(bytes));
}

static int write_cell(Out *out, const Field *f, Py_ssize_t i) {
    switch (f->kind) {
    case KIND_FLOAT:
        if (out_reserve(out, MAX_DOUBLE_CHARS) < 0) return -1;
        out->length += write_double(out->data + out->length, ((const double *)f->values.buf)[i],
                                    f->form);
        return 0;
    case KIND_INT: {
        int negative;
        uint64_t v = read_integer(f, i, &negative);
        if (out_reserve(out, 23) < 0) return -1;
        if (f->form == INT_QUOTED) out->data[out->length++] = '"';
        if (negative) out->data[out->length++] = '-';
        out->length += write_unsigned(out->data + out->length, v);
        if (f->form == INT_QUOTED) out->data[out->length++] = '"';
        return 0;
    }
    case KIND_BOOL:
        return write_text(out, PyTuple_GET_ITEM(f->texts, ((const char *)f->values.buf)[i] ? 0 : 1));
    case KIND_TABLE: {
        int negative;
        uint64_t code = read_integer(f, i, &negative);
        if (negative || code >= (uint64_t)f->text_count) {
            out_hold_gil(out);
            PyErr_Format(PyExc_ValueError, "row %zd: code outside the table of %zd texts", i,
                         f->text_count);
            return -1;
        }
        return write_text(out, PyTuple_GET_ITEM(f->texts, (Py_ssize_t)code));
    }
    default: {
        PyObject *text = f->strings[i - f->first];
        return f->form == STR_CSV ? write_csv_string(out, text) : write_json_string(out, text);
    }
    }
}

#define RELEASE_MIN_ROWS 256 /* rows worth letting the GIL go for */

PyDoc_STRVAR(rows_doc,
"rows(fields, start, stop, separator, tail) -> str\n\n"
"The text of rows start..stop-1, joined by `separator` (bytes): each row is, for each field\n"
"present in it, the field's literal (bytes) and its cell, then `tail` (bytes). A field is\n"
"(literal, kind, values, extra, mask); mask (a bool column, or None: always) says in which\n"
"rows it is present. Kinds: 1 float64 column, extra 0 (JSON) or 1 (repr); 2 integer column,\n"
"extra 0 (decimal) or 1 (decimal between double quotes);\n"
"3 bool column, extra (true text, false text); 4 integer codes into extra (a sequence of\n"
"bytes); 5 a list of str, extra 0 (JSON string) or 1 (CSV field, '\"' doubled). Columns are\n"
"1-d and C-contiguous with at least `stop` items.");

static PyObject *rows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *specs;
    Py_ssize_t start, stop;
    const char *separator, *tail;
    Py_ssize_t separator_length, tail_length;
    if (!PyArg_ParseTuple(args, "Onny#y#", &specs, &start, &stop, &separator,
                          &separator_length, &tail, &tail_length))
        return NULL;
    PyObject *seq = PySequence_Fast(specs, "fields must be a sequence");
    if (seq == NULL) return NULL;
    if (start < 0 || stop < start) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "expected 0 <= start <= stop");
        return NULL;
    }
    if (!powers_ready) compute_powers();
    const Py_ssize_t n_fields = PySequence_Fast_GET_SIZE(seq);
    Field *fields = PyMem_Calloc((size_t)(n_fields ? n_fields : 1), sizeof(Field));
    PyObject *result = NULL;
    Out out = {0};
    if (fields == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int ascii = 1;
    Py_ssize_t row_estimate = tail_length + separator_length;
    for (Py_ssize_t k = 0; k < n_fields; k++) {
        if (parse_field(PySequence_Fast_GET_ITEM(seq, k), &fields[k], start, stop, &ascii) < 0)
            goto done;
        row_estimate += fields[k].literal_length + 24;
    }
    for (Py_ssize_t k = 0; k < tail_length; k++)
        if ((unsigned char)tail[k] >= 0x80) ascii = 0;
    for (Py_ssize_t k = 0; k < separator_length; k++)
        if ((unsigned char)separator[k] >= 0x80) ascii = 0;
    if (out_init(&out, (stop - start) * row_estimate, ascii) < 0) goto done;
    if (stop - start >= RELEASE_MIN_ROWS) out_release_gil(&out);
    for (Py_ssize_t i = start; i < stop; i++) {
        if (i > start && out_write(&out, separator, separator_length) < 0) goto done;
        for (Py_ssize_t k = 0; k < n_fields; k++) {
            const Field *f = &fields[k];
            if (f->mask.obj != NULL && !((const char *)f->mask.buf)[i]) continue;
            if (out_write(&out, f->literal, f->literal_length) < 0 || write_cell(&out, f, i) < 0)
                goto done;
        }
        if (out_write(&out, tail, tail_length) < 0) goto done;
    }
    out_hold_gil(&out);
    result = out_finish(&out);
done:
    out_clear(&out);
    if (fields != NULL) {
        for (Py_ssize_t k = 0; k < n_fields; k++) field_clear(&fields[k]);
        PyMem_Free(fields);
    }
    Py_DECREF(seq);
    return result;
}

PyDoc_STRVAR(write_fd_doc,
"write_fd(fd, text)\n\n"
"Writes the str `text` as UTF-8 to the file descriptor `fd`, all of it. An ASCII str (every\n"
"datatable and json text) is written from its own bytes: no encoded copy, which was a\n"
"third of the time of writing a 58 MB datatable. Raises OSError.");

#define WRITE_CHUNK ((Py_ssize_t)1 << 30) /* bytes at most per write call */

static PyObject *write_fd(PyObject *self, PyObject *args) {
    (void)self;
    int fd;
    PyObject *text;
    if (!PyArg_ParseTuple(args, "iU", &fd, &text)) return NULL;
    Py_ssize_t size;
    const char *data = PyUnicode_AsUTF8AndSize(text, &size);
    if (data == NULL) return NULL;
    int error = 0;
    Py_BEGIN_ALLOW_THREADS
    while (size > 0) {
        Py_ssize_t n = write(fd, data, (size_t)(size < WRITE_CHUNK ? size : WRITE_CHUNK));
        if (n < 0) {
            if (errno == EINTR) continue;
            error = errno;
            break;
        }
        data += n;
        size -= n;
    }
    Py_END_ALLOW_THREADS
    if (error) {
        errno = error;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"rows", rows, METH_VARARGS, rows_doc},
    {"write_fd", write_fd, METH_VARARGS, write_fd_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_text",
    "Compiled writer of row texts from columns (see render/json_text.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__text(void) { return PyModule_Create(&module); }
