/* One JSON line of a protobuf message straight to its deterministic wire bytes, in C.
 *
 * holistic_client/json_wire.py documents the contract; in short: encode(schema, raw) returns
 * (wire, key) where wire is byte for byte json_format.Parse(raw) serialized with deterministic=True,
 * and key is the schema's key field (a string, "" when absent), or None whenever this file is not
 * sure: anything but the plain spellings of canonical protobuf JSON (a number given as a string, an
 * enum as a number, null, NaN, a timestamp with an offset, an unknown or repeated key, a lone
 * surrogate, bytes that are not UTF-8, ...). None sends the line to the Python parsers, which give
 * json_format's answer or its error. The answer may be "not sure", never a different message.
 *
 * schema: compile(spec) where spec is (fields, key_number) and each field is
 * (number, json_name, name, kind, repeated, presence, extra): extra is the sub-message's spec for
 * MESSAGE, a tuple of (name, number) for ENUM, else None (json_wire.py builds it from a descriptor).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { K_UNSUPPORTED = 0, K_STRING, K_DOUBLE, K_BOOL, K_ENUM, K_UINT32, K_MESSAGE, K_MAP_SS, K_TIMESTAMP, K_DURATION };

#define MAX_FIELDS 64
#define MAX_DEPTH 8
#define MAX_MAP 256          /* entries of one map; more: Python */
#define MAX_NUMBER_CHARS 64  /* a longer JSON number: Python */
#define MAX_DURATION_S 315576000000LL

typedef struct {
    char *name;
    size_t n;
    int32_t number;
} EnumValue;

typedef struct Schema Schema;

typedef struct {
    char *json, *name;
    size_t json_n, name_n;
    uint32_t number;
    int kind, repeated, presence;
    Schema *sub;
    EnumValue *values;
    size_t n_values;
} Field;

struct Schema {
    size_t n;
    Field *fields; /* in field-number order */
    int key;       /* index of the key field, -1 for none */
};

typedef struct {
    unsigned char *d;
    size_t n, cap;
} Buf;

typedef struct {
    const unsigned char *p, *end;
    Buf seg[MAX_DEPTH], child[MAX_DEPTH + 1], str, key;
    Buf key_value; /* the top-level key field's value */
    int has_key;
} Ctx;

/* ---- buffers ---------------------------------------------------------------------------------- */

static int grow(Buf *b, size_t more) {
    if (b->n + more <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more) cap *= 2;
    unsigned char *d = PyMem_Realloc(b->d, cap);
    if (d == NULL) return 0;
    b->d = d;
    b->cap = cap;
    return 1;
}

static inline int put(Buf *b, const void *p, size_t n) {
    if (!grow(b, n)) return 0;
    if (n) memcpy(b->d + b->n, p, n);
    b->n += n;
    return 1;
}

static inline int put_byte(Buf *b, unsigned char c) {
    if (!grow(b, 1)) return 0;
    b->d[b->n++] = c;
    return 1;
}

static inline int put_varint(Buf *b, uint64_t v) {
    if (!grow(b, 10)) return 0;
    while (v > 0x7F) {
        b->d[b->n++] = (unsigned char)(v & 0x7F) | 0x80;
        v >>= 7;
    }
    b->d[b->n++] = (unsigned char)v;
    return 1;
}

static inline size_t varint_size(uint64_t v) {
    size_t n = 1;
    while (v > 0x7F) v >>= 7, n++;
    return n;
}

static inline int put_tag(Buf *b, uint32_t number, int wire) { return put_varint(b, ((uint64_t)number << 3) | wire); }

static inline int put_len(Buf *b, uint32_t number, const unsigned char *p, size_t n) {
    return put_tag(b, number, 2) && put_varint(b, n) && put(b, p, n);
}

static void release(Buf *b) {
    PyMem_Free(b->d);
    b->d = NULL;
    b->n = b->cap = 0;
}

/* ---- JSON tokens -------------------------------------------------------------------------------- */

static inline void ws(Ctx *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static inline int expect(Ctx *c, unsigned char ch) {
    ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

static int hex4(const unsigned char *p, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char h = p[i];
        v <<= 4;
        if (h >= '0' && h <= '9') v |= h - '0';
        else if (h >= 'a' && h <= 'f') v |= h - 'a' + 10;
        else if (h >= 'A' && h <= 'F') v |= h - 'A' + 10;
        else return 0;
    }
    *out = v;
    return 1;
}

/* The length of one well-formed UTF-8 sequence at p (Python's strict decoder: no overlongs, no
 * surrogates, nothing past U+10FFFF), 0 for anything else. */
static int utf8_sequence(const unsigned char *p, const unsigned char *end) {
    unsigned char b = p[0];
    size_t left = (size_t)(end - p);
    if (b >= 0xC2 && b <= 0xDF) return left >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (b >= 0xE0 && b <= 0xEF) {
        if (left < 3 || (p[2] & 0xC0) != 0x80) return 0;
        unsigned char lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
        return p[1] >= lo && p[1] <= hi ? 3 : 0;
    }
    if (b >= 0xF0 && b <= 0xF4) {
        if (left < 4 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
        unsigned char lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
        return p[1] >= lo && p[1] <= hi ? 4 : 0;
    }
    return 0;
}

static int put_utf8(Buf *b, uint32_t cp) {
    unsigned char s[4];
    size_t n;
    if (cp < 0x80) s[0] = (unsigned char)cp, n = 1;
    else if (cp < 0x800) s[0] = 0xC0 | (cp >> 6), s[1] = 0x80 | (cp & 0x3F), n = 2;
    else if (cp < 0x10000) s[0] = 0xE0 | (cp >> 12), s[1] = 0x80 | ((cp >> 6) & 0x3F), s[2] = 0x80 | (cp & 0x3F), n = 3;
    else
        s[0] = 0xF0 | (cp >> 18), s[1] = 0x80 | ((cp >> 12) & 0x3F), s[2] = 0x80 | ((cp >> 6) & 0x3F),
        s[3] = 0x80 | (cp & 0x3F), n = 4;
    return put(b, s, n);
}

/* A JSON string's value, as UTF-8, into out (emptied first). 0: not sure (bad escape, lone surrogate,
 * raw control character, invalid UTF-8, unterminated). */
static int string(Ctx *c, Buf *out) {
    out->n = 0;
    ws(c);
    if (c->p >= c->end || *c->p != '"') return 0;
    const unsigned char *p = c->p + 1, *end = c->end;
    for (;;) {
        const unsigned char *run = p;
        while (p < end && *p != '"' && *p != '\\' && *p >= 0x20 && *p < 0x80) p++;
        if (p > run && !put(out, run, (size_t)(p - run))) return 0;
        if (p >= end) return 0;
        unsigned char ch = *p;
        if (ch == '"') {
            c->p = p + 1;
            return 1;
        }
        if (ch < 0x20) return 0;
        if (ch >= 0x80) {
            int n = utf8_sequence(p, end);
            if (!n || !put(out, p, (size_t)n)) return 0;
            p += n;
            continue;
        }
        /* a backslash */
        if (end - p < 2) return 0;
        unsigned char e = p[1], lit;
        p += 2;
        switch (e) {
            case '"': lit = '"'; break;
            case '\\': lit = '\\'; break;
            case '/': lit = '/'; break;
            case 'b': lit = '\b'; break;
            case 'f': lit = '\f'; break;
            case 'n': lit = '\n'; break;
            case 'r': lit = '\r'; break;
            case 't': lit = '\t'; break;
            case 'u': {
                uint32_t cp, lo;
                if (end - p < 4 || !hex4(p, &cp)) return 0;
                p += 4;
                if (cp >= 0xDC00 && cp <= 0xDFFF) return 0; /* a lone low surrogate */
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !hex4(p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                        return 0; /* a high surrogate without its low one */
                    p += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                if (!put_utf8(out, cp)) return 0;
                continue;
            }
            default: return 0;
        }
        if (!put_byte(out, lit)) return 0;
    }
}

/* A JSON number's text in the grammar of RFC 8259 (what Python's json reads, less NaN and Infinity). */
static int number(Ctx *c, const unsigned char **start, size_t *n, int *integral) {
    ws(c);
    const unsigned char *p = c->p, *end = c->end;
    *start = p;
    *integral = 1;
    if (p < end && *p == '-') p++;
    if (p >= end) return 0;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') while (p < end && *p >= '0' && *p <= '9') p++;
    else return 0;
    if (p < end && *p == '.') {
        *integral = 0;
        p++;
        if (p >= end || *p < '0' || *p > '9') return 0;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *integral = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') return 0;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    *n = (size_t)(p - *start);
    if (*n > MAX_NUMBER_CHARS) return 0;
    c->p = p;
    return 1;
}

/* A JSON number as Python's float(json.loads(text)) would give it: correctly rounded; an integer
 * literal is an int first, so "-0" is +0.0. 0 for infinities (json_format's words, not ours). */
static int json_double(Ctx *c, double *out) {
    const unsigned char *start;
    size_t n;
    int integral;
    if (!number(c, &start, &n, &integral)) return 0;
    char text[MAX_NUMBER_CHARS + 1], *stop;
    memcpy(text, start, n);
    text[n] = 0;
    double v = PyOS_string_to_double(text, &stop, NULL); /* locale-independent, correctly rounded */
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (stop != text + n || v - v != 0.0) return 0; /* not all read, or infinite */
    if (integral && v == 0.0) v = 0.0;               /* int("-0") is 0 */
    *out = v;
    return 1;
}

static int json_uint32(Ctx *c, uint32_t *out) {
    const unsigned char *start;
    size_t n;
    int integral;
    if (!number(c, &start, &n, &integral) || !integral || start[0] == '-' || n > 10) return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v = v * 10 + (start[i] - '0');
    if (v > 0xFFFFFFFFULL) return 0;
    *out = (uint32_t)v;
    return 1;
}

static int literal(Ctx *c, const char *word, size_t n) {
    ws(c);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return 0;
    c->p += n;
    return 1;
}

/* ---- well-known types --------------------------------------------------------------------------- */

static int digits(const unsigned char *p, int n, int64_t *out) {
    int64_t v = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return 0;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return 1;
}

/* Nanoseconds from 1 to 9 fraction digits (exactly what rounding float("0." + f) * 1e9 gives). */
static int fraction(const unsigned char *p, size_t n, int64_t *nanos) {
    if (n < 1 || n > 9 || !digits(p, (int)n, nanos)) return 0;
    for (size_t i = n; i < 9; i++) *nanos *= 10;
    return 1;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int seconds_nanos(Buf *out, int64_t seconds, int64_t nanos) {
    if (seconds && !(put_tag(out, 1, 0) && put_varint(out, (uint64_t)seconds))) return 0;
    if (nanos && !(put_tag(out, 2, 0) && put_varint(out, (uint64_t)nanos))) return 0;
    return 1;
}

/* `YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z`, year 1 to 9999, as Timestamp.FromJsonString reads it. */
static int timestamp(const unsigned char *s, size_t n, Buf *out) {
    int64_t y, mo, d, h, mi, se, nanos = 0;
    if (n < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[n - 1] != 'Z')
        return 0;
    if (!digits(s, 4, &y) || !digits(s + 5, 2, &mo) || !digits(s + 8, 2, &d) || !digits(s + 11, 2, &h) ||
        !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &se))
        return 0;
    if (n > 20 && (s[19] != '.' || !fraction(s + 20, n - 21, &nanos))) return 0;
    static const int dim[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > dim[mo - 1] + (mo == 2 && leap) || h > 23 || mi > 59 || se > 59)
        return 0;
    return seconds_nanos(out, days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se, nanos);
}

/* A non-negative `S[.f{1,9}]s` with S of 1 to 12 digits, at most 315,576,000,000. */
static int duration(const unsigned char *s, size_t n, Buf *out) {
    if (n < 2 || s[n - 1] != 's') return 0;
    size_t i = 0;
    while (i < n - 1 && s[i] >= '0' && s[i] <= '9') i++;
    int64_t seconds, nanos = 0;
    if (i < 1 || i > 12 || !digits(s, (int)i, &seconds) || seconds > MAX_DURATION_S) return 0;
    if (i < n - 1 && (s[i] != '.' || !fraction(s + i + 1, n - 2 - i, &nanos))) return 0;
    return seconds_nanos(out, seconds, nanos);
}

/* ---- messages ----------------------------------------------------------------------------------- */

static int message(Ctx *c, const Schema *s, int depth, Buf *out);

static const Field *find(const Schema *s, const Buf *key) {
    for (size_t i = 0; i < s->n; i++) {
        const Field *f = &s->fields[i];
        if ((f->json_n == key->n && memcmp(f->json, key->d, key->n) == 0) ||
            (f->name_n == key->n && memcmp(f->name, key->d, key->n) == 0))
            return f;
    }
    return NULL;
}

typedef struct {
    size_t key, key_n, value, value_n; /* offsets into the entries' buffer */
} Entry;

static const unsigned char *entries_base;

/* upb's deterministic order of string map keys: memcmp over the shorter length, then the LONGER first
 * ("abc" before "ab"; gateway/_wireproof.c and its tests hold the same rule to upb). */
static int entry_order(const void *x, const void *y) {
    const Entry *a = x, *b = y;
    size_t n = a->key_n < b->key_n ? a->key_n : b->key_n;
    int cmp = n ? memcmp(entries_base + a->key, entries_base + b->key, n) : 0;
    if (cmp) return cmp;
    return a->key_n == b->key_n ? 0 : (a->key_n > b->key_n ? -1 : 1);
}

/* A map<string, string>: its entries sorted, each {1: key, 2: value}, both written even when empty
 * (as upb does). A repeated key or more than MAX_MAP entries: not sure. */
static int map_ss(Ctx *c, const Field *f, int depth, Buf *seg) {
    if (!expect(c, '{')) return 0;
    Buf *all = &c->child[depth + 1];
    all->n = 0;
    Entry entries[MAX_MAP];
    size_t n = 0;
    if (!expect(c, '}')) {
        for (;;) {
            if (n == MAX_MAP) return 0;
            if (!string(c, &c->str)) return 0;
            Entry *e = &entries[n++];
            e->key = all->n, e->key_n = c->str.n;
            if (!put(all, c->str.d, c->str.n)) return 0;
            if (!expect(c, ':') || !string(c, &c->str)) return 0;
            e->value = all->n, e->value_n = c->str.n;
            if (!put(all, c->str.d, c->str.n)) return 0;
            if (expect(c, ',')) continue;
            if (expect(c, '}')) break;
            return 0;
        }
    }
    entries_base = all->d;
    if (n > 1) qsort(entries, n, sizeof(Entry), entry_order);
    for (size_t i = 0; i < n; i++) {
        const Entry *e = &entries[i];
        if (i && entry_order(&entries[i - 1], e) == 0) return 0; /* the same key twice */
        size_t k = e->key_n, v = e->value_n;
        size_t inner = 1 + varint_size(k) + k + 1 + varint_size(v) + v; /* {1: key, 2: value} */
        if (!(put_tag(seg, f->number, 2) && put_varint(seg, inner) && put_len(seg, 1, all->d + e->key, k) &&
              put_len(seg, 2, all->d + e->value, v)))
            return 0;
    }
    return 1;
}

/* One value of field f (one element when f is repeated) appended to seg as wire bytes. */
static int value(Ctx *c, const Field *f, int depth, Buf *seg) {
    int always = f->repeated || f->presence;
    switch (f->kind) {
        case K_STRING:
            if (!string(c, &c->str)) return 0;
            return (!always && c->str.n == 0) || put_len(seg, f->number, c->str.d, c->str.n);
        case K_DOUBLE: {
            double v;
            uint64_t bits;
            if (!json_double(c, &v)) return 0;
            memcpy(&bits, &v, 8);
            if (!always && bits == 0) return 1;
            unsigned char le[8];
            for (int i = 0; i < 8; i++) le[i] = (unsigned char)(bits >> (8 * i));
            return put_tag(seg, f->number, 1) && put(seg, le, 8);
        }
        case K_BOOL: {
            int v;
            if (literal(c, "true", 4)) v = 1;
            else if (literal(c, "false", 5)) v = 0;
            else return 0;
            return (!always && !v) || (put_tag(seg, f->number, 0) && put_byte(seg, (unsigned char)v));
        }
        case K_UINT32: {
            uint32_t v;
            if (!json_uint32(c, &v)) return 0;
            return (!always && !v) || (put_tag(seg, f->number, 0) && put_varint(seg, v));
        }
        case K_ENUM: {
            if (!string(c, &c->str)) return 0;
            for (size_t i = 0; i < f->n_values; i++) {
                const EnumValue *e = &f->values[i];
                if (e->n == c->str.n && memcmp(e->name, c->str.d, e->n) == 0)
                    return (!always && !e->number) ||
                           (put_tag(seg, f->number, 0) && put_varint(seg, (uint64_t)(int64_t)e->number));
            }
            return 0;
        }
        case K_TIMESTAMP:
        case K_DURATION: {
            if (!string(c, &c->str)) return 0;
            Buf *sub = &c->child[depth + 1];
            sub->n = 0;
            int ok = f->kind == K_TIMESTAMP ? timestamp(c->str.d, c->str.n, sub) : duration(c->str.d, c->str.n, sub);
            return ok && put_len(seg, f->number, sub->d, sub->n);
        }
        case K_MESSAGE: {
            if (depth + 1 >= MAX_DEPTH) return 0;
            Buf *sub = &c->child[depth + 1];
            sub->n = 0;
            return message(c, f->sub, depth + 1, sub) && put_len(seg, f->number, sub->d, sub->n);
        }
        default: return 0;
    }
}

/* A JSON object of schema s appended to out as its deterministic encoding: fields in number order
 * whatever the keys' order (each field's bytes gathered in seg, then copied in order). */
static int message(Ctx *c, const Schema *s, int depth, Buf *out) {
    if (!expect(c, '{')) return 0;
    Buf *seg = &c->seg[depth];
    seg->n = 0;
    size_t start[MAX_FIELDS], len[MAX_FIELDS];
    uint64_t seen = 0;
    int ordered = 1;
    size_t last = 0;
    if (!expect(c, '}')) {
        for (;;) {
            if (!string(c, &c->key) || !expect(c, ':')) return 0;
            const Field *f = find(s, &c->key);
            if (f == NULL) return 0;
            size_t i = (size_t)(f - s->fields);
            if (seen & (1ULL << i)) return 0; /* a key twice, or the field under both its names */
            seen |= 1ULL << i;
            if (i < last) ordered = 0;
            last = i;
            start[i] = seg->n;
            if (f->repeated && f->kind != K_MAP_SS) {
                if (!expect(c, '[')) return 0;
                if (!expect(c, ']')) {
                    for (;;) {
                        if (!value(c, f, depth, seg)) return 0;
                        if (expect(c, ',')) continue;
                        if (expect(c, ']')) break;
                        return 0;
                    }
                }
            } else if (f->kind == K_MAP_SS) {
                if (!map_ss(c, f, depth, seg)) return 0;
            } else if (!value(c, f, depth, seg)) {
                return 0;
            }
            len[i] = seg->n - start[i];
            if (depth == 0 && (int)i == s->key) {
                c->has_key = 1;
                c->key_value.n = 0;
                if (!put(&c->key_value, c->str.d, c->str.n)) return 0;
            }
            if (expect(c, ',')) continue;
            if (expect(c, '}')) break;
            return 0;
        }
    }
    if (ordered) return put(out, seg->d, seg->n);
    for (size_t i = 0; i < s->n; i++)
        if ((seen & (1ULL << i)) && !put(out, seg->d + start[i], len[i])) return 0;
    return 1;
}

/* ---- the schema --------------------------------------------------------------------------------- */

static void free_schema(Schema *s) {
    if (s == NULL) return;
    for (size_t i = 0; i < s->n; i++) {
        Field *f = &s->fields[i];
        PyMem_Free(f->json);
        PyMem_Free(f->name);
        free_schema(f->sub);
        for (size_t j = 0; j < f->n_values; j++) PyMem_Free(f->values[j].name);
        PyMem_Free(f->values);
    }
    PyMem_Free(s->fields);
    PyMem_Free(s);
}

static char *copy_str(PyObject *o, size_t *n) {
    Py_ssize_t len;
    const char *u = PyUnicode_AsUTF8AndSize(o, &len);
    if (u == NULL) return NULL;
    char *out = PyMem_Malloc(len + 1);
    if (out == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(out, u, len + 1);
    *n = (size_t)len;
    return out;
}

static Schema *build(PyObject *fields, int depth) {
    if (depth >= MAX_DEPTH) {
        PyErr_SetString(PyExc_ValueError, "messages nested too deep");
        return NULL;
    }
    if (!PyTuple_Check(fields) || PyTuple_GET_SIZE(fields) > MAX_FIELDS) {
        PyErr_SetString(PyExc_ValueError, "fields: a tuple of at most 64");
        return NULL;
    }
    Schema *s = PyMem_Calloc(1, sizeof(Schema));
    if (s == NULL) return (Schema *)PyErr_NoMemory();
    s->key = -1;
    s->n = (size_t)PyTuple_GET_SIZE(fields);
    s->fields = PyMem_Calloc(s->n ? s->n : 1, sizeof(Field));
    if (s->fields == NULL) {
        PyMem_Free(s);
        return (Schema *)PyErr_NoMemory();
    }
    for (size_t i = 0; i < s->n; i++) {
        Field *f = &s->fields[i];
        PyObject *json, *name, *extra;
        unsigned int number;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(fields, i), "IUUiipO", &number, &json, &name, &f->kind, &f->repeated,
                              &f->presence, &extra))
            goto fail;
        f->number = number;
        if (i && f->number <= s->fields[i - 1].number) {
            PyErr_SetString(PyExc_ValueError, "fields must be in increasing number order");
            goto fail;
        }
        if (!(f->json = copy_str(json, &f->json_n)) || !(f->name = copy_str(name, &f->name_n))) goto fail;
        if (f->kind == K_MESSAGE && !(f->sub = build(extra, depth + 1))) goto fail;
        if (f->kind == K_ENUM) {
            if (!PyTuple_Check(extra)) {
                PyErr_SetString(PyExc_ValueError, "an enum's values: a tuple of (name, number)");
                goto fail;
            }
            Py_ssize_t m = PyTuple_GET_SIZE(extra);
            f->values = PyMem_Calloc(m ? m : 1, sizeof(EnumValue));
            if (f->values == NULL) {
                PyErr_NoMemory();
                goto fail;
            }
            for (Py_ssize_t j = 0; j < m; j++) {
                PyObject *vname;
                int vnumber;
                if (!PyArg_ParseTuple(PyTuple_GET_ITEM(extra, j), "Ui", &vname, &vnumber)) goto fail;
                f->n_values = (size_t)j + 1;
                if (!(f->values[j].name = copy_str(vname, &f->values[j].n))) goto fail;
                f->values[j].number = vnumber;
            }
        }
    }
    return s;
fail:
    free_schema(s);
    return NULL;
}

static void capsule_free(PyObject *capsule) { free_schema(PyCapsule_GetPointer(capsule, "holistic_client.schema")); }

static PyObject *compile(PyObject *self, PyObject *args) {
    PyObject *fields;
    unsigned int key_number;
    if (!PyArg_ParseTuple(args, "(OI)", &fields, &key_number)) return NULL;
    Schema *s = build(fields, 0);
    if (s == NULL) return NULL;
    for (size_t i = 0; i < s->n; i++)
        if (s->fields[i].number == key_number && s->fields[i].kind == K_STRING && !s->fields[i].repeated)
            s->key = (int)i;
    PyObject *capsule = PyCapsule_New(s, "holistic_client.schema", capsule_free);
    if (capsule == NULL) free_schema(s);
    return capsule;
}

/* Buffers kept between calls (the GIL serializes calls): a line costs no allocation once warm. */
static Ctx ctx;

static PyObject *encode(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyBytes_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "encode(schema, raw: bytes)");
        return NULL;
    }
    const Schema *s = PyCapsule_GetPointer(args[0], "holistic_client.schema");
    if (s == NULL) return NULL;
    Ctx *c = &ctx;
    c->p = (const unsigned char *)PyBytes_AS_STRING(args[1]);
    c->end = c->p + PyBytes_GET_SIZE(args[1]);
    c->has_key = 0;
    Buf *out = &c->child[0];
    out->n = 0;
    int ok = message(c, s, 0, out);
    ws(c);
    if (!ok || c->p != c->end) {
        if (PyErr_Occurred()) return NULL; /* only a failed allocation sets one */
        Py_RETURN_NONE;
    }
    PyObject *wire = PyBytes_FromStringAndSize((const char *)out->d, (Py_ssize_t)out->n);
    PyObject *key = c->has_key ? PyUnicode_DecodeUTF8((const char *)c->key_value.d, (Py_ssize_t)c->key_value.n, "strict")
                               : PyUnicode_FromStringAndSize("", 0);
    if (out->cap > (1 << 20)) { /* a huge line: do not keep its memory */
        for (int i = 0; i < MAX_DEPTH; i++) release(&c->seg[i]);
        for (int i = 0; i <= MAX_DEPTH; i++) release(&c->child[i]);
        release(&c->str);
        release(&c->key_value);
    }
    if (wire == NULL || key == NULL) {
        Py_XDECREF(wire);
        Py_XDECREF(key);
        return NULL;
    }
    PyObject *pair = PyTuple_New(2);
    if (pair == NULL) {
        Py_DECREF(wire);
        Py_DECREF(key);
        return NULL;
    }
    PyTuple_SET_ITEM(pair, 0, wire);
    PyTuple_SET_ITEM(pair, 1, key);
    return pair;
}

static PyMethodDef methods[] = {
    {"compile", compile, METH_VARARGS, "compile((fields, key_number)) -> schema: see holistic_client/json_wire.py"},
    {"encode", (PyCFunction)(void (*)(void))encode, METH_FASTCALL,
     "encode(schema, raw: bytes) -> (wire: bytes, key: str) | None (None: not sure; ask json_format)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_jsonline", NULL, -1, methods};

PyMODINIT_FUNC PyInit__jsonline(void) { return PyModule_Create(&module); }
