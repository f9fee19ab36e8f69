/* Predictions per minute of a batch envelope, read from its wire bytes in C.
 *
 * metric_services/minutes.py documents the contract: counts(payload, fallback_minute) returns a dict
 * {epoch minute: predictions} in order of first appearance, the same as the Python loop over the
 * parsed envelope (produced_at's minute, floor division; the fallback when produced_at is unset or
 * zero), or None for anything it does not read as protobuf would (a group wire type, a truncated or
 * over-long varint or length): the caller then runs the loop. Every worker counts every batch it
 * applies, so the loop (a Python wrapper per prediction and per timestamp) was paid once per family.
 *
 * Protobuf's rules that matter here: predictions are field 3 of the envelope (wire type 2; another
 * wire type is an unknown field, skipped); produced_at is field 15 of a prediction and may come
 * several times (the messages merge: each later seconds or nanos wins); a field with another wire
 * type than its declared one is unknown and ignored. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} Reader;

typedef struct {
    int64_t minute;
    Py_ssize_t count;
} Bucket;

/* A varint of at most 10 bytes whose 10th carries at most bit 63; 0 otherwise (the caller gives up). */
static int varint(Reader *r, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70 && r->p < r->end; shift += 7) {
        uint8_t b = *r->p++;
        if (shift == 63 && b > 1) return 0;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* Skips one field's value; 0 on a group wire type or bytes that run past the end. */
static int skip(Reader *r, int wire) {
    uint64_t n;
    switch (wire) {
    case 0: return varint(r, &n);
    case 1: n = 8; break;
    case 5: n = 4; break;
    case 2:
        if (!varint(r, &n)) return 0;
        break;
    default: return 0;
    }
    if (n > (uint64_t)(r->end - r->p)) return 0;
    r->p += n;
    return 1;
}

/* A length-delimited field's bytes as a reader of their own. */
static int sub(Reader *r, Reader *out) {
    uint64_t n;
    if (!varint(r, &n) || n > (uint64_t)(r->end - r->p)) return 0;
    out->p = r->p;
    out->end = r->p + n;
    r->p += n;
    return 1;
}

/* The prediction's produced_at (seconds, nanos), merged over every occurrence of field 15. */
static int produced_at(Reader *pred, int64_t *seconds, int32_t *nanos) {
    while (pred->p < pred->end) {
        uint64_t key;
        if (!varint(pred, &key)) return 0;
        int wire = (int)(key & 7);
        if (key >> 3 == 15 && wire == 2) {
            Reader ts;
            if (!sub(pred, &ts)) return 0;
            while (ts.p < ts.end) {
                uint64_t tkey, v;
                if (!varint(&ts, &tkey)) return 0;
                int twire = (int)(tkey & 7);
                if (tkey >> 3 == 1 && twire == 0) {
                    if (!varint(&ts, &v)) return 0;
                    *seconds = (int64_t)v;
                } else if (tkey >> 3 == 2 && twire == 0) {
                    if (!varint(&ts, &v)) return 0;
                    *nanos = (int32_t)(uint32_t)v;
                } else if (!skip(&ts, twire)) {
                    return 0;
                }
            }
        } else if (!skip(pred, wire)) {
            return 0;
        }
    }
    return 1;
}

static int64_t floor_minute(int64_t s) {
    int64_t q = s / 60;
    return (s % 60 != 0 && s < 0) ? q - 1 : q;
}

static PyObject *counts(PyObject *self, PyObject *args) {
    Py_buffer buf;
    long long fallback;
    if (!PyArg_ParseTuple(args, "y*L", &buf, &fallback)) return NULL;
    Reader r = {(const uint8_t *)buf.buf, (const uint8_t *)buf.buf + buf.len};
    Py_ssize_t cap = 8, used = 0;
    Bucket *buckets = PyMem_Malloc(cap * sizeof(Bucket));
    PyObject *result = NULL;
    int ok = buckets != NULL;
    if (!ok) PyErr_NoMemory();
    Py_ssize_t last = -1;
    while (ok && r.p < r.end) {
        uint64_t key;
        if (!varint(&r, &key)) goto unread;
        int wire = (int)(key & 7);
        if (key >> 3 != 3 || wire != 2) {
            if (!skip(&r, wire)) goto unread;
            continue;
        }
        Reader pred;
        int64_t seconds = 0;
        int32_t nanos = 0;
        if (!sub(&r, &pred) || !produced_at(&pred, &seconds, &nanos)) goto unread;
        int64_t minute = (seconds || nanos) ? floor_minute(seconds) : (int64_t)fallback;
        if (last < 0 || buckets[last].minute != minute) {
            last = -1;
            for (Py_ssize_t i = 0; i < used; i++) {
                if (buckets[i].minute == minute) {
                    last = i;
                    break;
                }
            }
            if (last < 0) {
                if (used == cap) {
                    Bucket *grown = PyMem_Realloc(buckets, 2 * cap * sizeof(Bucket));
                    if (!grown) {
                        PyErr_NoMemory();
                        ok = 0;
                        break;
                    }
                    buckets = grown;
                    cap *= 2;
                }
                buckets[used].minute = minute;
                buckets[used].count = 0;
                last = used++;
            }
        }
        buckets[last].count++;
    }
    if (ok) {
        result = PyDict_New();
        for (Py_ssize_t i = 0; result && i < used; i++) {
            PyObject *k = PyLong_FromLongLong(buckets[i].minute), *v = PyLong_FromSsize_t(buckets[i].count);
            if (!k || !v || PyDict_SetItem(result, k, v) < 0) Py_CLEAR(result);
            Py_XDECREF(k);
            Py_XDECREF(v);
        }
    }
    goto done;
unread:
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(buckets);
    PyBuffer_Release(&buf);
    return result;
}

static PyMethodDef methods[] = {
    {"counts", counts, METH_VARARGS, "Predictions per minute of a BatchEnvelope's bytes, or None (see minutes.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_minutes", NULL, -1, methods};

PyMODINIT_FUNC PyInit__minutes(void) { return PyModule_Create(&module); }
