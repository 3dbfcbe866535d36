/* Compiled text scanning for the measure engine: whitespace tokens looked up in a vocabulary, and the sentence
 * rule of textproc.split_sentences. Both give exactly what the Python code in stereoscope/stats/textproc.py and
 * measures/lexical.py gives (tests/measures/test_textscan.py compares them on random and tricky texts); they only
 * skip making a Python object per token and running a regular expression per text.
 *
 * token_ids(texts, vocabulary) -> (ids, lengths, unknown)
 *     texts: a list of str (lower-cased already); vocabulary: a dict {token str: id int >= 0}.
 *     Each text is split as str.split() splits it (runs of characters that are not Py_UNICODE_ISSPACE). ids holds
 *     every token's id one text after the other, lengths every text's number of tokens: both as native int64 in a
 *     bytearray (numpy.frombuffer reads them). unknown lists the tokens not in the vocabulary, each once, in the
 *     order they first occur; such a token's id in ids is -1 - its place in that list.
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
    PyObject *key; /* borrowed: from the vocabulary, or from the list of unknown tokens, both held for the call */
    int64_t id;
} Slot;

typedef struct {
    Slot *slots;
    size_t mask, used;
} Table;

/* FNV-1a over the code points from a per-process seed, then a splitmix64 finaliser: the slot a token lands in
 * cannot be predicted from outside, so a text of crafted tokens cannot pile them into one run of the table (a
 * quadratic lookup). The seed comes from CPython's randomised str hash. */
static uint64_t hash_seed = 1469598103934665603ULL;

static inline uint64_t hash_finish(uint64_t h, Py_ssize_t length) {
    h ^= (uint64_t)length;
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}

static uint64_t hash_span(int kind, const void *data, Py_ssize_t start, Py_ssize_t end) {
    uint64_t h = hash_seed;
    for (Py_ssize_t i = start; i < end; i++) {
        h ^= (uint64_t)PyUnicode_READ(kind, data, i);
        h *= 1099511628211ULL;
    }
    return hash_finish(h, end - start);
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

/* Adds a key known not to be in the table, growing it to stay at most half full. */
static int table_add(Table *table, uint64_t hash, PyObject *key, int64_t id) {
    if (2 * (table->used + 1) > table->mask + 1) {
        size_t width = 2 * (table->mask + 1);
        Slot *slots = PyMem_Calloc(width, sizeof(Slot));
        if (!slots) {
            PyErr_NoMemory();
            return -1;
        }
        for (size_t i = 0; i <= table->mask; i++) {
            if (!table->slots[i].key) continue;
            size_t at = (size_t)table->slots[i].hash & (width - 1);
            while (slots[at].key) at = (at + 1) & (width - 1);
            slots[at] = table->slots[i];
        }
        PyMem_Free(table->slots);
        table->slots = slots;
        table->mask = width - 1;
    }
    size_t at = (size_t)hash & table->mask;
    while (table->slots[at].key) at = (at + 1) & table->mask;
    table->slots[at] = (Slot){hash, key, id};
    table->used++;
    return 0;
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
    Table table;
    Int64s ids;
    PyObject *unknown; /* a list */
} Scan;

/* The tokens of one text: each one's id pushed (a token first seen unknown is appended to scan->unknown and
 * added to the table with its number there); the number of tokens, or -1 with an exception set. */
static inline __attribute__((always_inline)) Py_ssize_t scan_tokens(Scan *scan, PyObject *text, int kind) {
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), i = 0, count = 0;
    while (1) {
        while (i < n && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i))) i++;
        if (i >= n) return count;
        Py_ssize_t start = i;
        uint64_t h = hash_seed;
        while (i < n) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (Py_UNICODE_ISSPACE(c)) break;
            h ^= (uint64_t)c;
            h *= 1099511628211ULL;
            i++;
        }
        h = hash_finish(h, i - start);
        const Table *table = &scan->table;
        Slot *found = NULL;
        for (size_t at = (size_t)h & table->mask; table->slots[at].key; at = (at + 1) & table->mask) {
            if (table->slots[at].hash == h && span_equals(table->slots[at].key, kind, data, start, i)) {
                found = &table->slots[at];
                break;
            }
        }
        int64_t id;
        if (found) {
            id = found->id;
        } else {
            PyObject *token = PyUnicode_Substring(text, start, i);
            if (!token) return -1;
            id = -1 - PyList_GET_SIZE(scan->unknown);
            int failed = PyList_Append(scan->unknown, token) < 0 || table_add(&scan->table, h, token, id) < 0;
            Py_DECREF(token); /* the list holds it */
            if (failed) return -1;
        }
        if (int64s_push(&scan->ids, id) < 0) return -1;
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
    Scan scan = {{PyMem_Calloc(width, sizeof(Slot)), width - 1, 0}, {0}, PyList_New(0)};
    Int64s lengths = {0};
    PyObject *result = NULL;
    if (!scan.table.slots || !scan.unknown) {
        PyMem_Free(scan.table.slots);
        Py_XDECREF(scan.unknown);
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
        uint64_t h = hash_span(PyUnicode_KIND(key), PyUnicode_DATA(key), 0, PyUnicode_GET_LENGTH(key));
        if (table_add(&scan.table, h, key, id) < 0) goto done; /* keys are distinct: a dict's */
    }

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
    PyObject *id_bytes = int64s_bytearray(&scan.ids);
    if (!id_bytes) goto done;
    PyObject *length_bytes = int64s_bytearray(&lengths);
    if (length_bytes) {
        result = PyTuple_Pack(3, id_bytes, length_bytes, scan.unknown);
        Py_DECREF(length_bytes);
    }
    Py_DECREF(id_bytes);
done:
    Py_DECREF(scan.unknown);
    PyMem_Free(scan.table.slots);
    PyMem_Free(scan.ids.items);
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

/* ---- packed sentence rows (measures/sentence_pack.py) ------------------------------------------------------ */

/* float_table(score_dicts) -> (keys, values) when every item is a dict with the same str keys in the same order
 * as the first and float values (exactly those types), values being every dict's values one after the other as
 * native float64 in a bytearray; else None. What sentence_pack._float_values checks, without a Python object per
 * value. */
static PyObject *float_table(PyObject *module, PyObject *dicts) {
    (void)module;
    if (!PyList_Check(dicts)) {
        PyErr_SetString(PyExc_TypeError, "float_table: a list of dicts");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(dicts);
    if (n == 0 || !PyDict_CheckExact(PyList_GET_ITEM(dicts, 0))) Py_RETURN_NONE;
    PyObject *first = PyList_GET_ITEM(dicts, 0);
    Py_ssize_t width = PyDict_GET_SIZE(first);
    PyObject *keys = PyTuple_New(width);
    if (!keys) return NULL;
    PyObject *key, *value;
    Py_ssize_t pos = 0, k = 0;
    while (PyDict_Next(first, &pos, &key, &value)) {
        if (!PyUnicode_CheckExact(key)) {
            Py_DECREF(keys);
            Py_RETURN_NONE;
        }
        Py_INCREF(key);
        PyTuple_SET_ITEM(keys, k++, key);
    }
    PyObject *values = PyByteArray_FromStringAndSize(NULL, n * width * (Py_ssize_t)sizeof(double));
    if (!values) {
        Py_DECREF(keys);
        return NULL;
    }
    double *out = (double *)PyByteArray_AS_STRING(values);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *dict = PyList_GET_ITEM(dicts, i);
        if (!PyDict_CheckExact(dict) || PyDict_GET_SIZE(dict) != width) goto not_a_table;
        pos = k = 0;
        while (PyDict_Next(dict, &pos, &key, &value)) {
            PyObject *want = PyTuple_GET_ITEM(keys, k);
            if (!PyFloat_CheckExact(value)) goto not_a_table;
            if (key != want) {
                if (!PyUnicode_Check(key)) goto not_a_table; /* a later dict's keys are compared by value */
                int same = PyUnicode_Compare(key, want);
                if (same == -1 && PyErr_Occurred()) goto failed;
                if (same != 0) goto not_a_table;
            }
            *out++ = PyFloat_AS_DOUBLE(value);
            k++;
        }
    }
    PyObject *result = PyTuple_Pack(2, keys, values);
    Py_DECREF(keys);
    Py_DECREF(values);
    return result;
not_a_table:
    Py_DECREF(keys);
    Py_DECREF(values);
    Py_RETURN_NONE;
failed:
    Py_DECREF(keys);
    Py_DECREF(values);
    return NULL;
}

typedef struct {
    Py_buffer view;
    Py_ssize_t row; /* bytes a row */
} Column;

/* assemble(sizes, heads, columns, row_bytes) -> [bytes of each story]: story i, of sizes[i] rows, is
 * b"SP1\n" + len(heads[i]) as little-endian uint32 + heads[i] + its rows' slice of each column in turn (columns:
 * a tuple of bytes-like, row_bytes: the bytes a row in each); b"" for a story of no rows. */
static PyObject *assemble(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *sizes, *heads, *columns, *row_bytes;
    if (!PyArg_ParseTuple(args, "O!O!O!O!:assemble", &PyList_Type, &sizes, &PyList_Type, &heads, &PyTuple_Type,
                          &columns, &PyTuple_Type, &row_bytes))
        return NULL;
    Py_ssize_t n_columns = PyTuple_GET_SIZE(columns), n_stories = PyList_GET_SIZE(sizes);
    if (PyTuple_GET_SIZE(row_bytes) != n_columns || PyList_GET_SIZE(heads) != n_stories || n_columns > 16) {
        PyErr_SetString(PyExc_ValueError, "assemble: one head a story, one row size a column, 16 columns at most");
        return NULL;
    }
    Column cols[16];
    Py_ssize_t got = 0, total = 0;
    PyObject *out = NULL;
    for (; got < n_columns; got++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(columns, got), &cols[got].view, PyBUF_SIMPLE) < 0) goto done;
        cols[got].row = PyLong_AsSsize_t(PyTuple_GET_ITEM(row_bytes, got));
        if (cols[got].row < 0) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "assemble: row sizes are not negative");
            got++;
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < n_stories; i++) {
        Py_ssize_t n = PyLong_AsSsize_t(PyList_GET_ITEM(sizes, i));
        if (n < 0 || n > PY_SSIZE_T_MAX / 2 - total) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "assemble: sizes are whole numbers, not too big");
            goto done;
        }
        total += n;
    }
    for (Py_ssize_t c = 0; c < n_columns; c++) {
        if ((cols[c].row && total > PY_SSIZE_T_MAX / 2 / cols[c].row) || cols[c].view.len != total * cols[c].row) {
            PyErr_SetString(PyExc_ValueError, "assemble: a column does not hold a row for each size");
            goto done;
        }
    }
    out = PyList_New(n_stories);
    if (!out) goto done;
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < n_stories; i++) {
        Py_ssize_t n = PyLong_AsSsize_t(PyList_GET_ITEM(sizes, i));
        PyObject *story;
        if (n == 0) {
            story = PyBytes_FromStringAndSize(NULL, 0);
        } else {
            PyObject *head = PyList_GET_ITEM(heads, i);
            if (!PyBytes_Check(head) || PyBytes_GET_SIZE(head) > 0xFFFFFFFF) {
                PyErr_SetString(PyExc_TypeError, "assemble: every head of a story with rows is bytes");
                Py_CLEAR(out);
                goto done;
            }
            Py_ssize_t head_size = PyBytes_GET_SIZE(head), size = 8 + head_size;
            for (Py_ssize_t c = 0; c < n_columns; c++) size += n * cols[c].row;
            story = PyBytes_FromStringAndSize(NULL, size);
            if (story) {
                char *to = PyBytes_AS_STRING(story);
                uint32_t length = (uint32_t)head_size;
                memcpy(to, "SP1\n", 4);
                for (int b = 0; b < 4; b++) to[4 + b] = (char)((length >> (8 * b)) & 0xFF);
                memcpy(to + 8, PyBytes_AS_STRING(head), (size_t)head_size);
                to += 8 + head_size;
                for (Py_ssize_t c = 0; c < n_columns; c++) {
                    memcpy(to, (const char *)cols[c].view.buf + at * cols[c].row, (size_t)(n * cols[c].row));
                    to += n * cols[c].row;
                }
            }
        }
        if (!story) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, story);
        at += n;
    }
done:
    for (Py_ssize_t c = 0; c < got; c++) PyBuffer_Release(&cols[c].view);
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
    PyObject *fields[4] = {PyLong_FromSsize_t(PyList_GET_SIZE(out)), PyLong_FromSsize_t(a), PyLong_FromSsize_t(b),
                           PyUnicode_Substring(text, a, b)};
    PyObject *sentence = fields[0] && fields[1] && fields[2] && fields[3] ? type->tp_alloc(type, 4) : NULL;
    if (!sentence) { /* the fields are made first: the new tuple is never seen with empty items */
        for (int f = 0; f < 4; f++) Py_XDECREF(fields[f]);
        return -1;
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
    {"float_table", float_table, METH_O, "(keys, float64 values) of dicts of one layout of floats, else None."},
    {"assemble", assemble, METH_VARARGS, "Each story's packed sentence rows from the chunk's columns."},
    {"sentences", sentences, METH_VARARGS, "The sentences of a text (textproc.split_sentences), or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_textscan", NULL, 0, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__textscan(void) {
    PyObject *probe = PyUnicode_FromString("stereoscope token hash seed");
    if (!probe) return NULL;
    Py_hash_t seed = PyObject_Hash(probe);
    Py_DECREF(probe);
    if (seed == -1 && PyErr_Occurred()) return NULL;
    hash_seed ^= (uint64_t)seed;
    for (Py_UCS4 c = 0; c < 256; c++) {
        Py_UCS4 lower = Py_UNICODE_TOLOWER(c);
        latin1_lower[c] = (Py_UCS1)(lower < 256 ? lower : c);
    }
    return PyModule_Create(&module);
}
