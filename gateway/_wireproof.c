/* Proving a SubmitPredictionsRequest valid from its wire bytes, in one pass, in C.
 *
 * gateway/wire_proof.py documents the contract; in short: prove(raw, max_batch, max_text, max_refs,
 * max_map, max_docs, latest_s) returns (model, batch_id, canonical, count, pairs) only when every rule of
 * gateway/validation.validate holds, else None, and then the Python path decides and names what is
 * wrong. Anything this file does not understand (an unknown field, a field sent twice, a wrong wire
 * type) is None: the answer may be "cannot prove", never a wrong "valid".
 *
 * canonical: raw is byte for byte what SerializeToString(deterministic=True) of its parse gives, so
 * its sha256 is the content digest without re-serializing. pairs: the distinct group (key, value)
 * pairs as (key, value, index of the first prediction carrying it), in order of first appearance.
 *
 * The rules' fixed limits and character classes are not in this file: gateway/request_rules.py holds them
 * and gateway/wire_proof.py passes them to configure() when it loads the module; prove() refuses to run
 * before that.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_CHOICES 64   /* more: the walk (a buffer size, not a rule) */
#define MAX_ENTRIES 256  /* map entries of one prediction, more: the walk */

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
    int canonical;
} Reader;

typedef struct {
    const uint8_t *p;
    Py_ssize_t n;
} Span;

/* ---- wire primitives ---------------------------------------------------------------------- */

/* A varint; 0 on a truncated or over-long one. A non-minimal encoding clears r->canonical. */
static inline int varint(Reader *r, uint64_t *out) {
    if (r->p < r->end && *r->p < 0x80) { /* one byte: most tags and lengths */
        *out = *r->p++;
        return 1;
    }
    uint64_t v = 0;
    int shift = 0;
    const uint8_t *start = r->p;
    while (r->p < r->end) {
        uint8_t b = *r->p++;
        if (shift == 63 && b > 1) return 0;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            if (b == 0 && r->p - start > 1) r->canonical = 0;  /* trailing zero group */
            *out = v;
            return 1;
        }
        shift += 7;
        if (shift > 63) return 0;
    }
    return 0;
}

static inline int tag(Reader *r, uint32_t *number, uint32_t *wire) {
    uint64_t key;
    if (!varint(r, &key) || key > 0xFFFFFFFFULL) return 0;
    *number = (uint32_t)(key >> 3);
    *wire = (uint32_t)(key & 7);
    return *number != 0;
}

static inline int bytes_field(Reader *r, Span *s) {
    uint64_t n;
    if (!varint(r, &n) || n > (uint64_t)(r->end - r->p)) return 0;
    s->p = r->p;
    s->n = (Py_ssize_t)n;
    r->p += n;
    return 1;
}

static int fixed64(Reader *r, double *out) {
    if (r->end - r->p < 8) return 0;
    memcpy(out, r->p, 8); /* little-endian hosts only: see the check in PyInit */
    r->p += 8;
    return 1;
}

static Reader sub(const Reader *parent, Span s) {
    Reader r = {s.p, s.p + s.n, parent->canonical};
    return r;
}

/* ---- rules -------------------------------------------------------------------------------- */

/* Whether s is UTF-8 as the real parse (upb) and Python's decoder accept it: no overlong forms, no
 * surrogates, nothing past U+10FFFF. The proof lets the gateway skip that parse, so it checks every
 * string field that is not already held to ASCII by a name rule. */
static int utf8(Span s) {
    const uint8_t *p = s.p, *end = s.p + s.n;
    while (p < end) {
        while (end - p >= 8) { /* eight ASCII bytes at a time */
            uint64_t w;
            memcpy(&w, p, 8);
            if (w & 0x8080808080808080ULL) break;
            p += 8;
        }
        if (p == end) break;
        uint8_t c = *p;
        if (c < 0x80) {
            p++;
        } else if (c < 0xC2) { /* a continuation byte first, or an overlong 2-byte form */
            return 0;
        } else if (c < 0xE0) {
            if (end - p < 2 || (p[1] & 0xC0) != 0x80) return 0;
            p += 2;
        } else if (c < 0xF0) {
            if (end - p < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
            if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] > 0x9F)) return 0; /* overlong; surrogate */
            p += 3;
        } else if (c < 0xF5) {
            if (end - p < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
            if ((c == 0xF0 && p[1] < 0x90) || (c == 0xF4 && p[1] > 0x8F)) return 0; /* overlong; > U+10FFFF */
            p += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* Whether s (valid UTF-8) has more than `most` code points. */
static int too_many_chars(Span s, Py_ssize_t most) {
    if (s.n <= most) return 0; /* never more characters than bytes */
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < s.n; i++) n += (s.p[i] & 0xC0) != 0x80;
    return n > most;
}

/* request_rules.RULES, set once by configure(). */
static struct {
    int ready;
    Py_ssize_t name_chars, tag_chars, batch_id_chars, id_chars, metadata_key_chars, metadata_value_chars;
    long long min_produced_at_s, max_duration_s;
    double probability_sum_tolerance;
    uint8_t name_char[256];     /* a name's characters after the first (the first: a letter or digit) */
    uint8_t batch_id_char[256];
} R;

static int alnum(uint8_t c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* request_rules.NAME_RE (most: name_chars) and TAG_RE (most: tag_chars) */
static int is_name(Span s, Py_ssize_t most) {
    if (s.n < 1 || s.n > most || !alnum(s.p[0])) return 0;
    for (Py_ssize_t i = 1; i < s.n; i++)
        if (!R.name_char[s.p[i]]) return 0;
    return 1;
}

/* request_rules.BATCH_ID_RE */
static int is_batch_id(Span s) {
    if (s.n < 1 || s.n > R.batch_id_chars) return 0;
    for (Py_ssize_t i = 0; i < s.n; i++)
        if (!R.batch_id_char[s.p[i]]) return 0;
    return 1;
}

static int same(Span a, Span b) { return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0); }

/* How upb's deterministic serialization sorts string map keys: memcmp over the shorter length, then
 * the LONGER first ("abc" before "ab"; tests/gateway/test_wire_proof.py holds this to upb). */
static int before(Span a, Span b) {
    Py_ssize_t n = a.n < b.n ? a.n : b.n;
    int c = n ? memcmp(a.p, b.p, n) : 0;
    return c < 0 || (c == 0 && a.n > b.n);
}

static uint64_t hash(Span s) {
    uint64_t h = 1469598103934665603ULL;
    for (Py_ssize_t i = 0; i < s.n; i++) h = (h ^ s.p[i]) * 1099511628211ULL;
    return h;
}

/* A set of byte strings, open addressing, at most half full (it grows); holds spans into the request. */
typedef struct {
    Span *slots;
    size_t mask;
    size_t count;
} SpanSet;

static int set_init(SpanSet *set, size_t expected) {
    size_t size = 16;
    while (size < expected * 2) size <<= 1;
    set->slots = PyMem_RawCalloc(size, sizeof(Span));
    set->mask = size - 1;
    set->count = 0;
    return set->slots != NULL;
}

static Span *set_slot(const SpanSet *set, Span s) {
    size_t i = (size_t)hash(s) & set->mask;
    while (set->slots[i].p != NULL && !same(set->slots[i], s)) i = (i + 1) & set->mask;
    return &set->slots[i];
}

/* 1: added; 0: already there; -1: out of memory */
static int set_add(SpanSet *set, Span s) {
    Span *slot = set_slot(set, s);
    if (slot->p != NULL) return 0;
    if ((set->count + 1) * 2 > set->mask + 1) { /* keep it at most half full: a free slot always ends a probe */
        SpanSet bigger;
        if (!set_init(&bigger, set->count + 1)) return -1;
        for (size_t i = 0; i <= set->mask; i++)
            if (set->slots[i].p != NULL) *set_slot(&bigger, set->slots[i]) = set->slots[i];
        bigger.count = set->count;
        PyMem_RawFree(set->slots);
        *set = bigger;
        slot = set_slot(set, s);
    }
    *slot = s;
    set->count++;
    return 1;
}

/* Duration / Timestamp: {1: int64 seconds, 2: int32 nanos}; fields once, in order. */
static int seconds_nanos(Reader r, int64_t *secs, int64_t *nanos, int *canonical) {
    *secs = 0;
    *nanos = 0;
    uint32_t last = 0, number, wire;
    while (r.p < r.end) {
        uint64_t v;
        if (!tag(&r, &number, &wire) || wire != 0 || number <= last || number > 2 || !varint(&r, &v)) return 0;
        last = number;
        if (v == 0) r.canonical = 0;  /* an implicit zero is not sent */
        if (number == 1) {
            *secs = (int64_t)v;
        } else {
            if (v > 0x7FFFFFFFULL && v < 0xFFFFFFFF80000000ULL) return 0;  /* not an int32 */
            *nanos = (int64_t)(int32_t)(uint32_t)v;
        }
    }
    if (!r.canonical) *canonical = 0;
    return 1;
}

/* validation.check_timing; a Timing's token counts are not checked. */
static int timing_ok(Reader r) {
    int64_t ls = 0, ln = 0, fs = 0, fn = 0;
    int has_latency = 0;
    uint32_t last = 0, number, wire;
    while (r.p < r.end) {
        if (!tag(&r, &number, &wire) || number <= last || number > 4) return 0;
        last = number;
        if (number <= 2) {
            Span s;
            if (wire != 2 || !bytes_field(&r, &s)) return 0;
            if (number == 1) {
                has_latency = 1;
                if (!seconds_nanos(sub(&r, s), &ls, &ln, &r.canonical)) return 0;
            } else if (!seconds_nanos(sub(&r, s), &fs, &fn, &r.canonical)) {
                return 0;
            }
        } else {
            uint64_t v;
            if (wire != 0 || !varint(&r, &v) || v > 0xFFFFFFFFULL) return 0;
        }
    }
    if (ls < 0 || ln < 0 || ln >= 1000000000 || ls >= R.max_duration_s) return 0;
    if (fs || fn) {
        if (fs < 0 || fn < 0 || fn >= 1000000000 || fs >= R.max_duration_s) return 0;
        if ((fs > ls || (fs == ls && fn > ln)) && has_latency) return 0;
    }
    return r.canonical ? 1 : 2;
}

/* One map entry {1: key, 2: value}, both present, in order. 0: cannot prove. */
static int entry(Reader r, Span *key, Span *value) {
    uint32_t number, wire;
    if (!tag(&r, &number, &wire) || number != 1 || wire != 2 || !bytes_field(&r, key)) return 0;
    if (!tag(&r, &number, &wire) || number != 2 || wire != 2 || !bytes_field(&r, value)) return 0;
    if (r.p != r.end) return 0;
    return r.canonical && key->n && value->n ? 1 : 2;
}

typedef struct {
    Span key, value;
    Py_ssize_t first;
} Pair;

typedef struct {
    /* limits */
    Py_ssize_t max_text, max_refs, max_map, max_docs;
    int64_t latest_s;
    /* state across the batch */
    Span model;        /* the batch's model so far (the request's, else its predictions' first) */
    Span scenario;     /* the last scenario proven a name */
    SpanSet ids;
    Pair *pairs;
    Py_ssize_t n_pairs, cap_pairs;
    Py_ssize_t *pair_slots; /* open addressing: index + 1 into pairs, 0 = empty */
    size_t pair_mask;
    int canonical;
} Batch;

static size_t pair_slot(const Batch *b, Span key, Span value) {
    size_t i = (size_t)(hash(key) * 31 ^ hash(value)) & b->pair_mask;
    while (b->pair_slots[i]) {
        const Pair *p = &b->pairs[b->pair_slots[i] - 1];
        if (same(p->key, key) && same(p->value, value)) break;
        i = (i + 1) & b->pair_mask;
    }
    return i;
}

/* A group (key, value) of prediction `index`: each distinct pair checked once. 0: cannot prove. */
static int add_pair(Batch *b, Span key, Span value, Py_ssize_t index) {
    if (b->pair_slots != NULL && b->pair_slots[pair_slot(b, key, value)]) return 1;
    if (!is_name(key, R.tag_chars) || !is_name(value, R.tag_chars)) return 0;
    if (b->n_pairs == b->cap_pairs) { /* grow the pairs and their table (a quarter full at most) together */
        Py_ssize_t cap = b->cap_pairs ? b->cap_pairs * 2 : 16;
        Pair *grown = PyMem_RawRealloc(b->pairs, cap * sizeof(Pair));
        if (grown == NULL) return 0;
        b->pairs = grown;
        b->cap_pairs = cap;
        PyMem_RawFree(b->pair_slots);
        b->pair_mask = (size_t)cap * 4 - 1;
        b->pair_slots = PyMem_RawCalloc(b->pair_mask + 1, sizeof(Py_ssize_t));
        if (b->pair_slots == NULL) return 0;
        for (Py_ssize_t i = 0; i < b->n_pairs; i++)
            b->pair_slots[pair_slot(b, b->pairs[i].key, b->pairs[i].value)] = i + 1;
    }
    Pair pair = {key, value, index};
    b->pairs[b->n_pairs++] = pair;
    b->pair_slots[pair_slot(b, key, value)] = b->n_pairs;
    return 1;
}

/* ChoiceProbability list of one prediction: check_choices. */
typedef struct {
    Span choice[MAX_CHOICES];
    int n;
    double total;
} Choices;

static int choice(Reader r, Choices *c) {
    Span name = {NULL, 0};
    double prob = 0.0;
    uint32_t last = 0, number, wire;
    while (r.p < r.end) {
        if (!tag(&r, &number, &wire) || number <= last || number > 2) return 0;
        last = number;
        if (number == 1) {
            if (wire != 2 || !bytes_field(&r, &name) || !utf8(name)) return 0;
            if (name.n == 0) r.canonical = 0;
        } else {
            uint64_t bits;
            if (wire != 1 || !fixed64(&r, &prob)) return 0;
            memcpy(&bits, &prob, 8);
            if ((bits & 0x7FFFFFFFFFFFFFFFULL) == 0) r.canonical = 0;  /* zero: maybe not sent */
        }
    }
    if (name.n == 0 || !(prob >= 0.0 && prob <= 1.0) || c->n == MAX_CHOICES) return 0;
    for (int i = 0; i < c->n; i++)
        if (same(c->choice[i], name)) return 0;
    c->choice[c->n++] = name;
    c->total += prob;
    return r.canonical ? 1 : 2;
}

/* Perturbation: check_perturbation (its original_id is compared with the id by the caller). */
static int perturbation(Reader r, Span *original) {
    Span name = {NULL, 0};
    uint64_t family = 0;
    uint32_t last = 0, number, wire;
    original->n = 0;
    while (r.p < r.end) {
        if (!tag(&r, &number, &wire) || number <= last || number > 3) return 0;
        last = number;
        if (number == 2) {
            if (wire != 0 || !varint(&r, &family)) return 0;
        } else {
            if (wire != 2 || !bytes_field(&r, number == 1 ? &name : original)) return 0;
        }
    }
    if (!is_name(name, R.tag_chars) || (family != 1 && family != 2)) return 0;
    if (original->n == 0 || !utf8(*original) || too_many_chars(*original, R.id_chars)) return 0;
    return r.canonical ? 1 : 2;
}

/* RankedDocument: ranking_validation.check_ranking's per-document rules. */
static int is_finite(double x) { return x - x == 0.0; }

static int document(Reader r, Span *id, int *has_score, int *has_output, int *has_relevance) {
    uint32_t last = 0, number, wire;
    id->n = 0;
    while (r.p < r.end) {
        if (!tag(&r, &number, &wire) || number <= last || number > 6) return 0;
        last = number;
        if (number == 1 || number == 3) {
            Span s;
            if (wire != 2 || !bytes_field(&r, number == 1 ? id : &s)) return 0;
            if (number == 3 && !utf8(s)) return 0;
            if (number == 3) *has_output = 1;
        } else if (number == 6) {
            uint64_t rank;
            if (wire != 0 || !varint(&r, &rank) || rank < 1 || rank > 0xFFFFFFFFULL) return 0;
        } else {
            double x;
            if (wire != 1 || !fixed64(&r, &x) || !is_finite(x)) return 0;
            if (number == 2) *has_score = 1;
            if (number == 5) {
                if (x < 0 || x != (double)(int64_t)x || x >= 9.2e18) return 0; /* a non-negative integer */
                *has_relevance = 1;
            }
        }
    }
    if (id->n == 0 || !utf8(*id) || too_many_chars(*id, R.id_chars)) return 0;
    return r.canonical ? 1 : 2;
}

/* Ranking: check_ranking and _check_form. *judgments_only as ranking_validation.judgments_only. */
static int ranking(Reader r, Py_ssize_t max_docs, int *judgments_only) {
    Span *ids = NULL, *order = NULL;
    Py_ssize_t n_ids = 0, n_order = 0;
    uint64_t form = 0;
    int scores = 0, outputs = 0, relevances = 0, ok = 0;
    uint32_t last = 0, number, wire, seen = 0;
    SpanSet docs = {NULL, 0}, named = {NULL, 0};
    Py_ssize_t cap = max_docs + 1, order_cap = 0;
    while (r.p < r.end) {
        if (!tag(&r, &number, &wire) || number > 3) goto out;
        if (number < last || (number != last && seen & (1u << number))) r.canonical = 0;
        if (number == 3 && seen & (1u << 3)) goto out;
        seen |= 1u << number;
        last = number;
        if (number == 3) {
            if (wire != 0 || !varint(&r, &form) || form > 4) goto out;
            if (form == 0) r.canonical = 0;
            continue;
        }
        Span s;
        if (wire != 2 || !bytes_field(&r, &s)) goto out;
        if (number == 1) {
            if (n_ids == max_docs) goto out;
            if (ids == NULL && (ids = PyMem_RawMalloc(cap * sizeof(Span))) == NULL) goto out;
            int got = document(sub(&r, s), &ids[n_ids], &scores, &outputs, &relevances);
            if (!got) goto out;
            if (got == 2) r.canonical = 0;
            n_ids++;
        } else {
            if (n_order == order_cap) {
                order_cap = order_cap ? order_cap * 2 : 16;
                Span *grown = PyMem_RawRealloc(order, order_cap * sizeof(Span));
                if (grown == NULL) goto out;
                order = grown;
            }
            if (!utf8(s)) goto out;
            order[n_order++] = s;
        }
    }
    if (!set_init(&docs, (size_t)n_ids)) goto out;
    for (Py_ssize_t i = 0; i < n_ids; i++)
        if (set_add(&docs, ids[i]) != 1) goto out; /* a document id twice */
    if (n_order) {
        if (form != 0 && form != 1) goto out;
        if (!set_init(&named, (size_t)n_order)) goto out;
        for (Py_ssize_t i = 0; i < n_order; i++) {
            if (set_add(&docs, order[i]) != 0) goto out; /* not among the documents */
            if (set_add(&named, order[i]) != 1) goto out; /* named twice */
        }
    }
    if (form == 2 && n_ids && !scores) goto out;
    if (form == 3 && n_ids && !outputs) goto out;
    if (form == 4 && !relevances) goto out;
    *judgments_only = form ? form == 4 : (!n_order && !scores && !outputs);
    ok = r.canonical ? 1 : 2;
out:
    PyMem_RawFree(ids);
    PyMem_RawFree(order);
    PyMem_RawFree(docs.slots);
    PyMem_RawFree(named.slots);
    return ok;
}

#define REPEATED_FIELDS ((1u << 7) | (1u << 10) | (1u << 13) | (1u << 16))

static int prediction(Batch *b, Reader r, Py_ssize_t index) {
    Span id = {NULL, 0}, original = {NULL, 0}, key, value;
    Span meta_keys[MAX_ENTRIES];
    Py_ssize_t refs = 0, n_groups = 0, n_meta = 0;
    Span last_group = {NULL, 0}, last_meta = {NULL, 0};
    int has_perturbation = 0, has_task = 0, has_scenario = 0, has_ranking = 0, judgments_only = 0;
    uint64_t task = 0;
    Choices choices;
    choices.n = 0;
    choices.total = 0.0;
    uint32_t last = 0, number, wire, seen = 0;
    Span group_keys[MAX_ENTRIES];
    while (r.p < r.end) {
        if (!tag(&r, &number, &wire) || number > 17) return 0;  /* unknown fields: the walk */
        if (number < last) r.canonical = 0;
        if (seen & (1u << number) && !(REPEATED_FIELDS & (1u << number))) return 0;  /* sent twice */
        if (number != last && seen & (1u << number)) r.canonical = 0;                 /* a repeat, not together */
        seen |= 1u << number;
        last = number;
        if (number == 4 || number == 11) {
            uint64_t v;
            if (wire != 0 || !varint(&r, &v)) return 0;
            if (number == 4) {
                if (v < 1 || v > 6) return 0;  /* unknown tasks */
                task = v;
                has_task = 1;
            } else if (v > 1) {
                r.canonical = 0;  /* a bool re-encodes as 1 */
            }
            continue;
        }
        if (number == 9) {
            double c;
            if (wire != 1 || !fixed64(&r, &c) || !(c >= 0.0 && c <= 1.0)) return 0;
            continue;
        }
        Span s;
        if (wire != 2 || !bytes_field(&r, &s)) return 0;
        switch (number) {
            case 1:
                if (s.n == 0 || !utf8(s) || too_many_chars(s, R.id_chars)) return 0;
                id = s;
                break;
            case 2:
                if (s.n == 0) {
                    r.canonical = 0;
                } else if (b->model.p == NULL) {
                    if (!is_name(s, R.name_chars)) return 0;
                    b->model = s;
                } else if (!same(s, b->model)) {
                    return 0;
                }
                break;
            case 3:
                has_scenario = 1;
                if (s.n == 0) return 0;
                if (!same(s, b->scenario)) {
                    if (!is_name(s, R.name_chars)) return 0;
                    b->scenario = s;
                }
                break;
            case 5:
            case 6:
            case 8:
                if (s.n > b->max_text || !utf8(s)) return 0;
                if (s.n == 0 && number != 8) r.canonical = 0;
                break;
            case 7:
                if (s.n > b->max_text || ++refs > b->max_refs || !utf8(s)) return 0;
                break;
            case 10: {
                int ok = choice(sub(&r, s), &choices);
                if (!ok) return 0;
                if (ok == 2) r.canonical = 0;
                break;
            }
            case 12: {
                int ok = perturbation(sub(&r, s), &original);
                if (!ok) return 0;
                if (ok == 2) r.canonical = 0;
                has_perturbation = 1;
                break;
            }
            case 13: {
                int ok = entry(sub(&r, s), &key, &value);
                if (!ok || n_groups == b->max_map || n_groups == MAX_ENTRIES) return 0;
                if (ok == 2 || (n_groups && !before(last_group, key))) r.canonical = 0;
                for (Py_ssize_t i = 0; i < n_groups; i++)
                    if (same(group_keys[i], key)) return 0;  /* a key twice: the last value wins */
                group_keys[n_groups++] = key;
                last_group = key;
                if (!add_pair(b, key, value, index)) return 0;
                break;
            }
            case 14: {
                int ok = timing_ok(sub(&r, s));
                if (!ok) return 0;
                if (ok == 2) r.canonical = 0;
                break;
            }
            case 15: {
                int64_t secs, nanos;
                if (!seconds_nanos(sub(&r, s), &secs, &nanos, &r.canonical)) return 0;
                if (secs || nanos) {
                    if (nanos < 0 || nanos >= 1000000000 || secs < R.min_produced_at_s || secs > b->latest_s) return 0;
                }
                break;
            }
            case 16: {
                int ok = entry(sub(&r, s), &key, &value);
                if (!ok || n_meta == b->max_map || n_meta == MAX_ENTRIES) return 0;
                if (ok == 2 || (n_meta && !before(last_meta, key))) r.canonical = 0;
                if (key.n == 0 || !utf8(key) || !utf8(value)) return 0;
                if (too_many_chars(key, R.metadata_key_chars) || too_many_chars(value, R.metadata_value_chars)) return 0;
                for (Py_ssize_t i = 0; i < n_meta; i++)
                    if (same(meta_keys[i], key)) return 0;
                meta_keys[n_meta++] = key;
                last_meta = key;
                break;
            }
            case 17: {
                int ok = ranking(sub(&r, s), b->max_docs, &judgments_only);
                if (!ok) return 0;
                if (ok == 2) r.canonical = 0;
                has_ranking = 1;
                break;
            }
            default:
                return 0;
        }
    }
    if (id.p == NULL || !has_task || !has_scenario) return 0;
    if ((task == 6) != has_ranking) return 0;  /* a ranking is for TASK_RANKING, and required there */
    /* judgments may follow their ranking, even in one batch: their id is not unique (nor counted) */
    if (!(task == 6 && judgments_only) && set_add(&b->ids, id) != 1) return 0;  /* duplicates an earlier id */
    if (has_perturbation && same(original, id)) return 0;
    if (choices.n && !(choices.total - 1.0 <= R.probability_sum_tolerance && 1.0 - choices.total <= R.probability_sum_tolerance))
        return 0;
    if (!r.canonical) b->canonical = 0;
    return 1;
}

static int request(Batch *b, Reader r, Py_ssize_t max_batch, Py_ssize_t *count, Span *out_batch_id) {
    Span batch_id = {NULL, 0};
    uint32_t last = 0, number, wire, seen = 0;
    Py_ssize_t n = 0;
    while (r.p < r.end) {
        Span s;
        if (!tag(&r, &number, &wire) || number > 3 || wire != 2 || !bytes_field(&r, &s)) return 0;
        if (number < last) r.canonical = 0;
        if (number != 3 && seen & (1u << number)) return 0;
        if (number == 3 && number != last && seen & (1u << number)) r.canonical = 0;
        seen |= 1u << number;
        last = number;
        if (number == 1) {
            batch_id = s;
        } else if (number == 2) {
            if (seen & (1u << 3)) return 0; /* after predictions that may have named another model */
            if (s.n == 0) {
                r.canonical = 0;
            } else {
                if (!is_name(s, R.name_chars)) return 0;
                b->model = s;
            }
        } else {
            if (++n > max_batch) return 0;
            if (!prediction(b, sub(&r, s), n - 1)) return 0;
        }
    }
    if (!is_batch_id(batch_id) || n == 0 || b->model.p == NULL) return 0;
    if (!r.canonical) b->canonical = 0;
    *count = n;
    *out_batch_id = batch_id;
    return 1;
}

static PyObject *prove(PyObject *self, PyObject *args) {
    Py_buffer raw;
    Py_ssize_t max_batch, max_text, max_refs, max_map, max_docs;
    long long latest_s;
    if (!R.ready) {
        PyErr_SetString(PyExc_RuntimeError, "_wireproof.configure(request_rules) was not called");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*nnnnnL", &raw, &max_batch, &max_text, &max_refs, &max_map, &max_docs, &latest_s))
        return NULL;
    Batch b;
    memset(&b, 0, sizeof b);
    b.max_text = max_text;
    b.max_refs = max_refs;
    b.max_map = max_map;
    b.max_docs = max_docs;
    b.latest_s = latest_s;
    b.canonical = 1;
    Py_ssize_t expected = raw.len / 256 + 1; /* a guess: the set grows */
    if (expected > max_batch) expected = max_batch;
    PyObject *result = NULL;
    if (!set_init(&b.ids, (size_t)expected)) {
        PyBuffer_Release(&raw);
        return PyErr_NoMemory();
    }
    Reader r = {(const uint8_t *)raw.buf, (const uint8_t *)raw.buf + raw.len, 1};
    Py_ssize_t count = 0;
    Span batch_id = {NULL, 0};
    int ok;
    /* Without the GIL (the bytes object is immutable): no Python API in here, and every allocation is
     * PyMem_Raw*, the allocator that is safe without it. */
    Py_BEGIN_ALLOW_THREADS
    ok = request(&b, r, max_batch, &count, &batch_id);
    Py_END_ALLOW_THREADS
    if (!ok) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *pairs = PyList_New(b.n_pairs);
    if (pairs == NULL) goto done;
    for (Py_ssize_t i = 0; i < b.n_pairs; i++) {
        Pair *p = &b.pairs[i];
        PyObject *item = Py_BuildValue("(s#s#n)", p->key.p, p->key.n, p->value.p, p->value.n, p->first);
        if (item == NULL) {
            Py_DECREF(pairs);
            goto done;
        }
        PyList_SET_ITEM(pairs, i, item);
    }
    result = Py_BuildValue("(s#s#NnN)", b.model.p, b.model.n, batch_id.p, batch_id.n, PyBool_FromLong(b.canonical),
                           count, pairs);
done:
    PyMem_RawFree(b.ids.slots);
    PyMem_RawFree(b.pairs);
    PyMem_RawFree(b.pair_slots);
    PyBuffer_Release(&raw);
    return result;
}

static int table_size(PyObject *table, const char *name, Py_ssize_t *out) {
    PyObject *v = PyDict_GetItemString(table, name); /* borrowed */
    if (v == NULL || !PyLong_Check(v)) {
        PyErr_Format(PyExc_ValueError, "configure: %s must be an int", name);
        return 0;
    }
    *out = PyLong_AsSsize_t(v);
    if (*out < 0) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "configure: %s must be >= 0", name);
        return 0;
    }
    return 1;
}

static int table_chars(PyObject *table, const char *name, uint8_t *allowed) {
    PyObject *v = PyDict_GetItemString(table, name);
    if (v == NULL || !PyUnicode_Check(v) || !PyUnicode_IS_ASCII(v)) {
        PyErr_Format(PyExc_ValueError, "configure: %s must be an ASCII str", name);
        return 0;
    }
    const char *text = PyUnicode_AsUTF8(v);
    if (text == NULL) return 0;
    for (const char *c = text; *c; c++) allowed[(uint8_t)*c] = 1;
    return 1;
}

static PyObject *configure(PyObject *self, PyObject *table) {
    if (!PyDict_Check(table)) {
        PyErr_SetString(PyExc_TypeError, "configure: a dict (request_rules.RULES.as_c_table())");
        return NULL;
    }
    Py_ssize_t min_produced, max_duration;
    uint8_t name_char[256] = {0}, batch_id_char[256] = {0};
    if (!table_size(table, "name_chars", &R.name_chars) || !table_size(table, "tag_chars", &R.tag_chars) ||
        !table_size(table, "batch_id_chars", &R.batch_id_chars) || !table_size(table, "id_chars", &R.id_chars) ||
        !table_size(table, "metadata_key_chars", &R.metadata_key_chars) ||
        !table_size(table, "metadata_value_chars", &R.metadata_value_chars) ||
        !table_size(table, "min_produced_at_s", &min_produced) || !table_size(table, "max_duration_s", &max_duration) ||
        !table_chars(table, "name_punctuation", name_char) || !table_chars(table, "batch_id_punctuation", batch_id_char)) {
        R.ready = 0;
        return NULL;
    }
    PyObject *tol = PyDict_GetItemString(table, "probability_sum_tolerance");
    if (tol == NULL || !PyFloat_Check(tol)) {
        R.ready = 0;
        PyErr_SetString(PyExc_ValueError, "configure: probability_sum_tolerance must be a float");
        return NULL;
    }
    R.probability_sum_tolerance = PyFloat_AsDouble(tol);
    R.min_produced_at_s = min_produced;
    R.max_duration_s = max_duration;
    for (int c = 0; c < 256; c++) {
        R.name_char[c] = alnum((uint8_t)c) || name_char[c];
        R.batch_id_char[c] = alnum((uint8_t)c) || batch_id_char[c];
    }
    R.ready = 1;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_O, "configure(request_rules.RULES.as_c_table()): the rules' fixed limits"},
    {"prove", prove, METH_VARARGS,
     "prove(raw, max_batch, max_text, max_refs, max_map, max_docs, latest_s) -> (model, batch_id, canonical, count, "
     "pairs) | None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_wireproof", NULL, -1, methods};

PyMODINIT_FUNC PyInit__wireproof(void) {
    const uint16_t one = 1;
    if (*(const uint8_t *)&one != 1) {
        PyErr_SetString(PyExc_ImportError, "_wireproof reads doubles as little-endian");
        return NULL;
    }
    return PyModule_Create(&module);
}
