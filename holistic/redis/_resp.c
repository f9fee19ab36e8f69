/* A Redis command's RESP bytes in one pass over its arguments, without a bytes object per argument.
 *
 * holistic/redis/connection.py documents the contract: pack(args) returns the bytes hiredis.pack_command
 * (and redis-py's own packer) would send for the tuple `args`, or None when an argument is not an exact
 * str, bytes, int or float (a subclass, a bool, None...) or an int does not fit in 64 bits: the caller
 * then packs as before, with its errors. An apply script carries tens of thousands of arguments; the
 * packer they replace encoded each str into a new bytes object first, and a worker's arguments are
 * strings made throughout a batch, scattered in memory: ~0.3-0.5 µs an argument there.
 * A str goes as its UTF-8 (an ASCII string's own buffer; UTF-8 cached by CPython otherwise); one that
 * cannot be encoded (a lone surrogate) raises, as redis-py's encoder would. A float goes as its repr. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *data;
    Py_ssize_t len;
} Arg;

static Py_ssize_t digits(Py_ssize_t n) {
    Py_ssize_t d = 1;
    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

static char *put_header(char *out, char kind, Py_ssize_t n) {
    int w = sprintf(out, "%c%zd\r\n", kind, n);
    return out + w;
}

static PyObject *pack(PyObject *self, PyObject *args_obj) {
    if (!PyTuple_CheckExact(args_obj)) {
        PyErr_SetString(PyExc_TypeError, "pack() takes a tuple");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(args_obj);
    Arg *argv = PyMem_Malloc(sizeof(Arg) * (n ? n : 1));
    char *numbers = PyMem_Malloc(24 * (n ? n : 1)); /* an int's decimal digits, 24 bytes an argument */
    PyObject *reprs = NULL;                           /* a float's repr, kept alive until copied */
    PyObject *result = NULL;
    if (argv == NULL || numbers == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t total = 1 + digits(n) + 2;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PyTuple_GET_ITEM(args_obj, i);
        if (PyUnicode_CheckExact(a)) {
            argv[i].data = PyUnicode_AsUTF8AndSize(a, &argv[i].len);
            if (argv[i].data == NULL) goto done; /* a lone surrogate: UnicodeEncodeError */
        } else if (PyBytes_CheckExact(a)) {
            argv[i].data = PyBytes_AS_STRING(a);
            argv[i].len = PyBytes_GET_SIZE(a);
        } else if (PyLong_CheckExact(a)) {
            int overflow = 0;
            long long v = PyLong_AsLongLongAndOverflow(a, &overflow);
            if (overflow) {
                result = Py_None;
                Py_INCREF(result);
                goto done;
            }
            if (v == -1 && PyErr_Occurred()) goto done;
            char *at = numbers + 24 * i;
            argv[i].data = at;
            argv[i].len = snprintf(at, 24, "%lld", v);
        } else if (PyFloat_CheckExact(a)) {
            if (reprs == NULL && (reprs = PyList_New(0)) == NULL) goto done;
            PyObject *r = PyObject_Repr(a);
            if (r == NULL) goto done;
            int failed = PyList_Append(reprs, r);
            Py_DECREF(r);
            if (failed) goto done;
            argv[i].data = PyUnicode_AsUTF8AndSize(r, &argv[i].len);
            if (argv[i].data == NULL) goto done;
        } else {
            result = Py_None;
            Py_INCREF(result);
            goto done;
        }
        total += 1 + digits(argv[i].len) + 2 + argv[i].len + 2;
    }
    result = PyBytes_FromStringAndSize(NULL, total);
    if (result == NULL) goto done;
    char *out = PyBytes_AS_STRING(result);
    out = put_header(out, '*', n);
    for (Py_ssize_t i = 0; i < n; i++) {
        out = put_header(out, '$', argv[i].len);
        memcpy(out, argv[i].data, argv[i].len);
        out += argv[i].len;
        *out++ = '\r';
        *out++ = '\n';
    }
done:
    PyMem_Free(argv);
    PyMem_Free(numbers);
    Py_XDECREF(reprs);
    return result;
}

static PyMethodDef methods[] = {
    {"pack", pack, METH_O, "A command's RESP bytes, or None for an argument it does not pack."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_resp", NULL, -1, methods};

PyMODINIT_FUNC PyInit__resp(void) { return PyModule_Create(&module); }
