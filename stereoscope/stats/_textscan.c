/* Compiled text scanning for the measure engine: whitespace tokens looked up in a vocabulary, and the sentence
 * rule of textproc.split_sentences. Both give exactly what the Python code in stereoscope/stats/textproc.py and
 * measures/lexical.py gives (tests/measures/test_textscan.py compares them on random and tricky texts); they only
 * skip making a Python object per token and running a regular expression per text.
 *
 * token_ids(texts, vocabulary) -> (ids, lengths, unknown)
 *     texts: a list of str (lower-cased already); vocabulary: a dict {token str: id int >= 0}.
 *     Each text is split as str.split() splits it (runs of characters that are not Py_UNICODE_ISSPACE). ids holds
 *     every token's id one text after the other (-1 for a token not in the vocabulary), lengths every text's
 *     number of tokens: both as native int64 in a bytearray (numpy.frombuffer reads them). unknown lists the
 *     tokens not in the vocabulary, each once, in the order they first occur.
 *
 * lower_latin1(text) -> text.lower() for a text CPython stores one byte a character (Latin-1), else None: every
 *     Latin-1 character lower-cases to one Latin-1 character, whatever surrounds it, so a table does it.
 *
 * sentences(text, sentence_type, abbreviations) -> list of sentence_type(index, start, end, sentence text), or
 *     None for a text with a character beyond the Basic Multilingual Plane (the caller splits it rule by rule, as
 *     before). sentence_type is a tuple subclass of four fields (textproc.Sentence); abbreviations a tuple of
 *     lower-case ASCII str (textproc.ABBREVIATIONS). The rules are those of textproc._boundaries().
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* ---- token_ids ------------------------------------------------------------------------------------------- */

typedef struct {
    uint64_t hash;
    PyObject *key; /* borrowed from the vocabulary, which the caller holds for the whole call */
    int64_t id;
} Slot;

static uint64_t hash_span(int kind, const void *data, Py_ssize_t start, Py_ssize_t end) {
    uint64_t h = 1469598103934665603ULL;
    for (Py_ssize_t i = start; i < end; i++) {
        h ^= (uint64_t)PyUnicode_READ(kind, data, i);
        h *= 1099511628211ULL;
    }
    return h ^ (uint64_t)(end - start);
}

static int span_equals(PyObject *key, int kind, const void *data, Py_ssize_t start, Py_ssize_t end) {
    Py_ssize_t n = end - start;
    if (PyUnicode_GET_LENGTH(key) != n) return 0;
    int key_kind = PyUnicode_KIND(key);
    const void *key_data = PyUnicode_DATA(key);
    if (key_kind == kind)
        return memcmp(key_data, (const char *)data + start * kind, (size_t)(n * kind)) == 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (PyUnicode_READ(key_kind, key_data, i) != PyUnicode_READ(kind, data, start + i)) return 0;
    return 1;
}

typedef struct {
    int64_t *items;
    Py_ssize_t size, capacity;
} Int64s;

static int int64s_push(Int64s *a, int64_t value) {
    if (a->size == a->capacity) {
        Py_ssize_t capacity = a->capacity ? 2 * a->capacity : 4096;
        int64_t *items = PyMem_Realloc(a->items, (size_t)capacity * sizeof(int64_t));
        if (!items) {
            PyErr_NoMemory();
            return -1;
        }
        a->items = items;
        a->capacity = capacity;
    }
    a->items[a->size++] = value;
    return 0;
}

static PyObject *int64s_bytearray(Int64s *a) {
    return PyByteArray_FromStringAndSize((const char *)a->items, a->size * (Py_ssize_t)sizeof(int64_t));
}

typedef struct {
    Slot *table;
    size_t mask;
    Int64s *ids;
    PyObject *unknown;
} Scan;

/* The tokens of one text: each one's id pushed (an unknown one also added to scan->unknown); the number of tokens,
 * or -1 with an exception set. */
static inline __attribute__((always_inline)) Py_ssize_t scan_tokens(Scan *scan, PyObject *text, int kind) {
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), i = 0, count = 0;
    while (1) {
        while (i < n && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i))) i++;
        if (i >= n) return count;
        Py_ssize_t start = i;
        uint64_t h = 1469598103934665603ULL;
        while (i < n) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (Py_UNICODE_ISSPACE(c)) break;
            h ^= (uint64_t)c;
            h *= 1099511628211ULL;
            i++;
        }
        h ^= (uint64_t)(i - start);
        int64_t id = -1;
        for (size_t at = (size_t)h & scan->mask; scan->table[at].key; at = (at + 1) & scan->mask) {
            if (scan->table[at].hash == h && span_equals(scan->table[at].key, kind, data, start, i)) {
                id = scan->table[at].id;
                break;
            }
        }
        if (id < 0) {
            PyObject *token = PyUnicode_Substring(text, start, i);
            if (!token) return -1;
            int failed = PyDict_SetDefault(scan->unknown, token, Py_None) == NULL;
            Py_DECREF(token);
            if (failed) return -1;
        }
        if (int64s_push(scan->ids, id) < 0) return -1;
        count++;
    }
}

static PyObject *token_ids(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *texts, *vocabulary;
    if (!PyArg_ParseTuple(args, "O!O!:token_ids", &PyList_Type, &texts, &PyDict_Type, &vocabulary)) return NULL;
    Py_ssize_t entries = PyDict_GET_SIZE(vocabulary);
    size_t width = 16;
    while (width < 2 * (size_t)entries + 1) width <<= 1;
    size_t mask = width - 1;
    Slot *table = PyMem_Calloc(width, sizeof(Slot));
    Int64s ids = {0}, lengths = {0};
    PyObject *result = NULL, *unknown = PyDict_New(); /* a dict: ordered, each token once */
    if (!table || !unknown) {
        PyMem_Free(table);
        Py_XDECREF(unknown);
        return PyErr_NoMemory();
    }

    Py_INCREF(texts);
    Py_INCREF(vocabulary);
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(vocabulary, &pos, &key, &value)) {
        if (!PyUnicode_Check(key) || !PyLong_Check(value)) {
            PyErr_SetString(PyExc_TypeError, "token_ids: the vocabulary maps str to int");
            goto done;
        }
        int64_t id = PyLong_AsLongLong(value);
        if (id == -1 && PyErr_Occurred()) goto done;
        if (id < 0) {
            PyErr_SetString(PyExc_ValueError, "token_ids: vocabulary ids are not negative");
            goto done;
        }
        int kind = PyUnicode_KIND(key);
        uint64_t h = hash_span(kind, PyUnicode_DATA(key), 0, PyUnicode_GET_LENGTH(key));
        size_t at = (size_t)h & mask;
        while (table[at].key) at = (at + 1) & mask; /* keys are distinct: a dict's */
        table[at].hash = h;
        table[at].key = key;
        table[at].id = id;
    }

    Scan scan = {table, mask, &ids, unknown};
    Py_ssize_t n_texts = PyList_GET_SIZE(texts);
    for (Py_ssize_t t = 0; t < n_texts; t++) {
        PyObject *text = PyList_GET_ITEM(texts, t);
        if (!PyUnicode_Check(text)) {
            PyErr_SetString(PyExc_TypeError, "token_ids: every text is a str");
            goto done;
        }
        Py_ssize_t count;
        switch (PyUnicode_KIND(text)) { /* one loop compiled per width */
        case PyUnicode_1BYTE_KIND:
            count = scan_tokens(&scan, text, PyUnicode_1BYTE_KIND);
            break;
        case PyUnicode_2BYTE_KIND:
            count = scan_tokens(&scan, text, PyUnicode_2BYTE_KIND);
            break;
        default:
            count = scan_tokens(&scan, text, PyUnicode_4BYTE_KIND);
        }
        if (count < 0 || int64s_push(&lengths, count) < 0) goto done;
    }
    PyObject *id_bytes = int64s_bytearray(&ids);
    if (!id_bytes) goto done;
    PyObject *length_bytes = int64s_bytearray(&lengths);
    if (!length_bytes) {
        Py_DECREF(id_bytes);
        goto done;
    }
    PyObject *unknown_list = PyDict_Keys(unknown);
    if (unknown_list) {
        result = PyTuple_Pack(3, id_bytes, length_bytes, unknown_list);
        Py_DECREF(unknown_list);
    }
    Py_DECREF(id_bytes);
    Py_DECREF(length_bytes);
done:
    Py_DECREF(unknown);
    PyMem_Free(table);
    PyMem_Free(ids.items);
    PyMem_Free(lengths.items);
    Py_DECREF(texts);
    Py_DECREF(vocabulary);
    return result;
}

/* ---- lower_latin1 ------------------------------------------------------------------------------------------ */

static Py_UCS1 latin1_lower[256]; /* filled by the module's init */

static PyObject *lower_latin1(PyObject *module, PyObject *text) {
    (void)module;
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "lower_latin1: the text is a str");
        return NULL;
    }
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND) Py_RETURN_NONE;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    /* Lower-casing keeps a Latin-1 text ASCII or not ASCII as it was (tests: test_textscan.py). */
    PyObject *out = PyUnicode_New(n, PyUnicode_IS_ASCII(text) ? 127 : 255);
    if (!out) return NULL;
    const Py_UCS1 *from = PyUnicode_1BYTE_DATA(text);
    Py_UCS1 *to = PyUnicode_1BYTE_DATA(out);
    for (Py_ssize_t i = 0; i < n; i++) to[i] = latin1_lower[from[i]];
    return out;
}

/* ---- sentences ------------------------------------------------------------------------------------------- */

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t n;
    PyObject *abbreviations;
} Text;

#define AT(t, i) PyUnicode_READ((t)->kind, (t)->data, (i))

static int is_end_char(Py_UCS4 c) { return c == '.' || c == '!' || c == '?' || c == 0x2026; }

static int is_closer(Py_UCS4 c) {
    return c == '"' || c == '\'' || c == 0x201D || c == 0x2019 || c == 0x00BB || c == ')' || c == ']';
}

static int is_word_or_dot(Py_UCS4 c) { return c == '.' || c == '_' || Py_UNICODE_ISALNUM(c); }

/* `[closers]*+(?=\s|\Z)(?![^\S\n]*+{lower})` then `\s*+`, from j: where the match ends, or -1. */
static Py_ssize_t end_at(const Text *t, Py_ssize_t j) {
    while (j < t->n && is_closer(AT(t, j))) j++;
    if (j < t->n && !Py_UNICODE_ISSPACE(AT(t, j))) return -1;
    Py_ssize_t k = j;
    while (k < t->n) {
        Py_UCS4 c = AT(t, k);
        if (c == '\n' || !Py_UNICODE_ISSPACE(c)) break;
        k++;
    }
    if (k < t->n && Py_UNICODE_ISLOWER(AT(t, k))) return -1;
    while (j < t->n && Py_UNICODE_ISSPACE(AT(t, j))) j++;
    return j;
}

/* Whether the full stop just before p ends a known abbreviation (rule 3) or an initial. */
static int stop_after_abbreviation(const Text *t, Py_ssize_t p) {
    Py_ssize_t stop = p - 1;
    Py_ssize_t count = PyTuple_GET_SIZE(t->abbreviations);
    for (Py_ssize_t a = 0; a < count; a++) {
        PyObject *abbreviation = PyTuple_GET_ITEM(t->abbreviations, a);
        Py_ssize_t len = PyUnicode_GET_LENGTH(abbreviation);
        Py_ssize_t from = stop - len;
        if (from < 0) continue;
        int a_kind = PyUnicode_KIND(abbreviation);
        const void *a_data = PyUnicode_DATA(abbreviation);
        int same = 1;
        for (Py_ssize_t i = 0; i < len && same; i++) {
            Py_UCS4 want = PyUnicode_READ(a_kind, a_data, i), got = AT(t, from + i);
            same = got == want || (want >= 'a' && want <= 'z' && got == want - 'a' + 'A');
        }
        if (same && (from == 0 || !is_word_or_dot(AT(t, from - 1)))) return 1;
    }
    if (stop >= 1 && Py_UNICODE_ISUPPER(AT(t, stop - 1)) && (stop == 1 || !is_word_or_dot(AT(t, stop - 2)))) return 1;
    return 0;
}

/* textproc._boundaries() tried at i: the end of its match, or -1. */
static Py_ssize_t boundary_at(const Text *t, Py_ssize_t i) {
    Py_UCS4 c = AT(t, i);
    Py_ssize_t j = i + 1;
    if (c == '\n') {
        while (j < t->n && Py_UNICODE_ISSPACE(AT(t, j))) j++;
        return j;
    }
    if (c == '!' || c == '?' || c == 0x2026) {
        while (j < t->n && is_end_char(AT(t, j))) j++;
        return end_at(t, j);
    }
    if (c != '.') return -1;
    if (j < t->n && is_end_char(AT(t, j))) {
        while (j < t->n && is_end_char(AT(t, j))) j++;
        return end_at(t, j);
    }
    if (stop_after_abbreviation(t, j)) return -1;
    return end_at(t, j);
}

static int add_sentence(PyObject *out, PyTypeObject *type, PyObject *text, const Text *t, Py_ssize_t a,
                        Py_ssize_t b) {
    while (a < b && Py_UNICODE_ISSPACE(AT(t, a))) a++;
    while (b > a && Py_UNICODE_ISSPACE(AT(t, b - 1))) b--;
    Py_ssize_t i = a;
    while (i < b && !Py_UNICODE_ISALNUM(AT(t, i))) i++;
    if (i == b) return 0; /* no letter or digit: dropped */
    PyObject *sentence = type->tp_alloc(type, 4);
    if (!sentence) return -1;
    PyObject *fields[4] = {PyLong_FromSsize_t(PyList_GET_SIZE(out)), PyLong_FromSsize_t(a), PyLong_FromSsize_t(b),
                           PyUnicode_Substring(text, a, b)};
    for (int f = 0; f < 4; f++) {
        if (!fields[f]) {
            for (int g = 0; g < 4; g++) Py_XDECREF(fields[g]);
            Py_DECREF(sentence);
            return -1;
        }
    }
    for (int f = 0; f < 4; f++) PyTuple_SET_ITEM(sentence, f, fields[f]);
    int failed = PyList_Append(out, sentence);
    Py_DECREF(sentence);
    return failed;
}

static PyObject *sentences(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *text, *type, *abbreviations;
    if (!PyArg_ParseTuple(args, "UO!O!:sentences", &text, &PyType_Type, &type, &PyTuple_Type, &abbreviations))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "sentences: the sentence type is a tuple subclass");
        return NULL;
    }
    for (Py_ssize_t a = 0; a < PyTuple_GET_SIZE(abbreviations); a++) {
        PyObject *abbreviation = PyTuple_GET_ITEM(abbreviations, a);
        if (!PyUnicode_Check(abbreviation) || !PyUnicode_IS_ASCII(abbreviation)) {
            PyErr_SetString(PyExc_TypeError, "sentences: abbreviations are ASCII str");
            return NULL;
        }
    }
    Text t = {PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text), abbreviations};
    if (t.kind == PyUnicode_4BYTE_KIND) {
        for (Py_ssize_t i = 0; i < t.n; i++)
            if (AT(&t, i) > 0xFFFF) Py_RETURN_NONE;
    }
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    Py_ssize_t piece = 0, i = 0;
    while (i < t.n) {
        Py_UCS4 c = AT(&t, i);
        if (c == '\n' || is_end_char(c)) {
            Py_ssize_t end = boundary_at(&t, i);
            if (end >= 0) {
                if (add_sentence(out, (PyTypeObject *)type, text, &t, piece, end) < 0) goto failed;
                piece = i = end;
                continue;
            }
        }
        i++;
    }
    if (add_sentence(out, (PyTypeObject *)type, text, &t, piece, t.n) < 0) goto failed;
    return out;
failed:
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"token_ids", token_ids, METH_VARARGS, "(ids, lengths) of the whitespace tokens of lower-cased texts."},
    {"lower_latin1", lower_latin1, METH_O, "str.lower() of a text stored one byte a character, else None."},
    {"sentences", sentences, METH_VARARGS, "The sentences of a text (textproc.split_sentences), or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_textscan", NULL, 0, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__textscan(void) {
    for (Py_UCS4 c = 0; c < 256; c++) {
        Py_UCS4 lower = Py_UNICODE_TOLOWER(c);
        latin1_lower[c] = (Py_UCS1)(lower < 256 ? lower : c);
    }
    return PyModule_Create(&module);
}
