/*
 * Compiled decoder of serialized XEvent messages (proto/xplane.proto) into flat columns.
 *
 * event_table.py keeps each event of an XLineLite as raw bytes. Decoding them one
 * protobuf message at a time costs microseconds per event, and the numpy varint passes
 * cannot take doubles or strings apart; this walks the wire format once, in C.
 *
 * The result follows protobuf's (upb's) parse semantics so that it equals decoding each
 * event with XEvent.FromString:
 *   - a field whose wire type is not its declared one is an unknown field and skipped;
 *   - unknown fields of every wire type are skipped, groups included (nested at most
 *     DEPTH_LIMIT deep, counting the XStat message as one level);
 *   - in a oneof (XEvent.data, XStat.value) the last field on the wire wins and clears
 *     the others; a repeated scalar keeps its last value;
 *   - malformed input raises WireError (a ValueError): a truncated or over-long varint, a
 *     length past the end, field number 0, a tag above 2**32 - 1, wire type 6 or 7, an
 *     unmatched end-group, or a str_value that is not valid UTF-8.
 *
 * Strings and bytes are not copied: each one is reported as (event index, start, length)
 * within its event's bytes, and Python builds the objects that are asked for.
 *
 * Every read is checked against the end of its buffer before it happens. The GIL is
 * held throughout; the event bytes objects are referenced by the list being decoded.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

/* Same as upb's default: a message's nesting depth, groups and sub-messages counted. */
#define DEPTH_LIMIT 100

enum { KIND_NONE = 0, KIND_INT = 1, KIND_DOUBLE = 2, KIND_REF = 3, KIND_STR = 4, KIND_BYTES = 5 };
enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2, WIRE_START_GROUP = 3,
       WIRE_END_GROUP = 4, WIRE_FIXED32 = 5 };

static PyObject *WireError;

/* --- output columns ------------------------------------------------------------------ */

/* A column handed to Python: memory of its own, exposed through the buffer protocol (numpy
 * wraps it without a copy) and freed with the object. Made while the GIL is released,
 * wrapped once it is held again. */
typedef struct {
    PyObject_HEAD
    char *data;
    Py_ssize_t size;
} Buffer;

static int buffer_get(PyObject *self, Py_buffer *view, int flags) {
    Buffer *b = (Buffer *)self;
    return PyBuffer_FillInfo(view, self, b->data, b->size, 0, flags);
}

static void buffer_dealloc(PyObject *self) {
    PyMem_RawFree(((Buffer *)self)->data);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs buffer_procs = {buffer_get, NULL};

static Py_ssize_t buffer_length(PyObject *self) { return ((Buffer *)self)->size; }

static PySequenceMethods buffer_sequence = {.sq_length = buffer_length};

static PyTypeObject BufferType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tb_roofline_plugin.xspace._wire.Buffer",
    .tp_doc = "A column of the decoder's output (a bytes-like buffer; len: its bytes).",
    .tp_basicsize = sizeof(Buffer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = buffer_dealloc,
    .tp_as_buffer = &buffer_procs,
    .tp_as_sequence = &buffer_sequence,
};

/* Growable columns that share one row count: the stats of a line (one row per XStat) or
 * where its str/bytes values lie. Each column is raw memory (no Python object, so rows grow
 * without the GIL), handed to Python as a Buffer when done (`rows_take`). */
#define MAX_COLUMNS 10

typedef struct {
    Py_ssize_t count, capacity; /* rows used, rows allocated */
    int n_columns;
    Py_ssize_t item_size[MAX_COLUMNS];
    char *data[MAX_COLUMNS]; /* each column's memory; it moves when the column grows */
} Rows;

#define CELL(rows, column, type, row) (((type *)(rows)->data[column])[row])
enum { STAT_EVENT, STAT_ID, STAT_KIND, STAT_BITS, STAT_NUMBER };
enum { OBJ_EVENT, OBJ_START, OBJ_LENGTH };
static const Py_ssize_t STAT_SIZES[] = {8, 8, 1, 8, 8};
static const Py_ssize_t OBJ_SIZES[] = {8, 8, 8};

static void rows_init(Rows *r, int n_columns, const Py_ssize_t *item_size) {
    memset(r, 0, sizeof *r);
    r->n_columns = n_columns;
    for (int c = 0; c < n_columns; c++) r->item_size[c] = item_size[c];
}

/* Resizes every column to `capacity` rows; -1 (no Python error: the GIL may be released)
 * when memory runs out. */
static int rows_resize(Rows *r, Py_ssize_t capacity) {
    for (int c = 0; c < r->n_columns; c++) {
        size_t size = (size_t)(capacity ? capacity : 1) * (size_t)r->item_size[c];
        char *data = PyMem_RawRealloc(r->data[c], size);
        if (data == NULL) return -1;
        r->data[c] = data;
    }
    r->capacity = capacity;
    return 0;
}

/* Makes room for one more row (capacity doubles, so appending costs O(1) per row). */
static inline int rows_reserve(Rows *r) {
    if (r->count < r->capacity) return 0;
    if (r->capacity > PY_SSIZE_T_MAX / 16) return -1;
    return rows_resize(r, r->capacity ? r->capacity * 2 : 1024);
}

static void rows_clear(Rows *r) {
    for (int c = 0; c < r->n_columns; c++) {
        PyMem_RawFree(r->data[c]);
        r->data[c] = NULL;
    }
}

/* Column `c` as a Buffer of its rows (it owns the memory from now on); NULL with a Python
 * error set. Needs the GIL. */
static PyObject *rows_take(Rows *r, int c) {
    size_t size = (size_t)r->count * (size_t)r->item_size[c];
    char *data = PyMem_RawRealloc(r->data[c], size ? size : 1); /* cut to the rows */
    if (data == NULL) return PyErr_NoMemory();
    r->data[c] = data;
    Buffer *b = PyObject_New(Buffer, &BufferType);
    if (b == NULL) return NULL;
    b->data = data;
    b->size = (Py_ssize_t)size;
    r->data[c] = NULL;
    return (PyObject *)b;
}

/* Every column of `rows` as Buffers, appended to `out` (a list); -1 with a Python error. */
static int rows_take_all(Rows *r, PyObject *out) {
    for (int c = 0; c < r->n_columns; c++) {
        PyObject *column = rows_take(r, c);
        if (column == NULL) return -1;
        int failed = PyList_Append(out, column);
        Py_DECREF(column);
        if (failed < 0) return -1;
    }
    return 0;
}

/* --- wire reading --------------------------------------------------------------------- */

typedef struct {
    const uint8_t *start;  /* of the event: string positions are relative to it */
    const char *error;     /* set on malformed input */
    const int64_t *wanted; /* stat metadata ids to keep (NULL: every stat) */
    Py_ssize_t n_wanted;
} Parser;

/* Reads a varint of at most 10 bytes; bits past 64 are dropped, as protobuf does. */
static int read_long_varint(Parser *ps, const uint8_t **p, const uint8_t *end, uint64_t *out) {
    uint64_t value = 0;
    const uint8_t *q = *p;
    for (int i = 0; i < 10; i++) {
        if (q >= end) {
            ps->error = "truncated varint";
            return -1;
        }
        uint8_t byte = *q++;
        value |= (uint64_t)(byte & 0x7F) << (7 * i); /* 7 * 9 = 63: shift stays in range */
        if (byte < 0x80) {
            *p = q;
            *out = value;
            return 0;
        }
    }
    ps->error = "varint longer than 10 bytes";
    return -1;
}

/* The same, with one-byte varints (most tags, ids and lengths) inline. */
static inline int read_varint(Parser *ps, const uint8_t **p, const uint8_t *end,
                              uint64_t *out) {
    if (*p < end && **p < 0x80) {
        *out = *(*p)++;
        return 0;
    }
    return read_long_varint(ps, p, end, out);
}

static int read_tag(Parser *ps, const uint8_t **p, const uint8_t *end, uint32_t *field,
                    int *wire) {
    uint64_t tag;
    if (read_varint(ps, p, end, &tag) < 0) return -1;
    if (tag > UINT32_MAX) {
        ps->error = "tag out of range";
        return -1;
    }
    *field = (uint32_t)(tag >> 3);
    *wire = (int)(tag & 7);
    if (*field == 0) {
        ps->error = "field number 0";
        return -1;
    }
    return 0;
}

/* Reads a length prefix and checks the bytes it announces are there. */
static int read_length(Parser *ps, const uint8_t **p, const uint8_t *end, uint64_t *length) {
    if (read_varint(ps, p, end, length) < 0) return -1;
    if (*length > (uint64_t)(end - *p)) {
        ps->error = "length past the end";
        return -1;
    }
    return 0;
}

static int skip_bytes(Parser *ps, const uint8_t **p, const uint8_t *end, size_t n) {
    if (n > (size_t)(end - *p)) {
        ps->error = "fixed-width value past the end";
        return -1;
    }
    *p += n;
    return 0;
}

/* Skips the value of an unknown field whose tag was just read. */
static int skip_field(Parser *ps, const uint8_t **p, const uint8_t *end, uint32_t field,
                      int wire, int depth) {
    uint64_t value;
    switch (wire) {
    case WIRE_VARINT:
        return read_varint(ps, p, end, &value);
    case WIRE_FIXED64:
        return skip_bytes(ps, p, end, 8);
    case WIRE_FIXED32:
        return skip_bytes(ps, p, end, 4);
    case WIRE_LEN:
        if (read_length(ps, p, end, &value) < 0) return -1;
        *p += value;
        return 0;
    case WIRE_START_GROUP:
        if (--depth < 0) {
            ps->error = "groups nested too deep";
            return -1;
        }
        /* Fields up to the end-group tag of the same field number. */
        for (;;) {
            uint32_t inner;
            int inner_wire;
            if (*p >= end) {
                ps->error = "unterminated group";
                return -1;
            }
            if (read_tag(ps, p, end, &inner, &inner_wire) < 0) return -1;
            if (inner_wire == WIRE_END_GROUP) {
                if (inner != field) {
                    ps->error = "mismatched end-group";
                    return -1;
                }
                return 0;
            }
            /* Recursion is bounded by DEPTH_LIMIT. */
            if (skip_field(ps, p, end, inner, inner_wire, depth) < 0) return -1;
        }
    case WIRE_END_GROUP:
        ps->error = "end-group without a group";
        return -1;
    default:
        ps->error = "invalid wire type";
        return -1;
    }
}

/* Well-formed UTF-8 (Unicode Table 3-7: no overlongs, surrogates or values past U+10FFFF). */
static int valid_utf8(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        /* ASCII runs, 8 bytes at a time. */
        while (i + 8 <= n) {
            uint64_t word;
            memcpy(&word, s + i, 8);
            if (word & 0x8080808080808080ULL) break;
            i += 8;
        }
        if (i >= n) break;
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t more;
        uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
        if (c >= 0xC2 && c <= 0xDF) {
            more = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            more = 2;
            if (c == 0xE0) lo = 0xA0;      /* no overlongs */
            else if (c == 0xED) hi = 0x9F; /* no surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            more = 3;
            if (c == 0xF0) lo = 0x90;      /* no overlongs */
            else if (c == 0xF4) hi = 0x8F; /* nothing past U+10FFFF */
        } else {
            return 0;
        }
        if (more > n - i - 1) return 0;
        if (s[i + 1] < lo || s[i + 1] > hi) return 0;
        for (size_t k = 2; k <= more; k++) {
            if (s[i + k] < 0x80 || s[i + k] > 0xBF) return 0;
        }
        i += more + 1;
    }
    return 1;
}

/* --- messages ------------------------------------------------------------------------- */

/* One XStat's fields as the wire gives them (the last value of the oneof wins). */
typedef struct {
    int64_t id, bits;
    int8_t kind;
    double number;
    const uint8_t *object; /* a str/bytes value: where it lies in the event */
    uint64_t object_length;
} Stat;

/* Decodes one XStat (the bytes [p, end)) into `out`; -1 for malformed input. */
static int scan_stat(Parser *ps, const uint8_t *p, const uint8_t *end, Stat *out) {
    int64_t id = 0, bits = 0;
    int8_t kind = KIND_NONE;
    double number = 0.0;
    const uint8_t *object = NULL;
    uint64_t object_length = 0;
    const int depth = DEPTH_LIMIT - 1; /* the XStat message is one level */

    while (p < end) {
        uint32_t field;
        int wire;
        uint64_t value;
        if (read_tag(ps, &p, end, &field, &wire) < 0) return -1;
        if (wire == WIRE_VARINT && (field == 1 || field == 3 || field == 4 || field == 7)) {
            if (read_varint(ps, &p, end, &value) < 0) return -1;
            if (field == 1) {
                id = (int64_t)value;
            } else { /* a oneof member: replaces any earlier value */
                kind = field == 7 ? KIND_REF : KIND_INT;
                bits = (int64_t)value;
                number = 0.0;
            }
        } else if (wire == WIRE_FIXED64 && field == 2) {
            if (end - p < 8) {
                ps->error = "truncated double";
                return -1;
            }
            uint64_t raw = 0;
            for (int k = 7; k >= 0; k--) raw = (raw << 8) | p[k]; /* little-endian */
            memcpy(&number, &raw, sizeof number);
            p += 8;
            kind = KIND_DOUBLE;
            bits = 0;
        } else if (wire == WIRE_LEN && (field == 5 || field == 6)) {
            if (read_length(ps, &p, end, &value) < 0) return -1;
            if (field == 5 && !valid_utf8(p, (size_t)value)) {
                ps->error = "str_value is not valid UTF-8";
                return -1;
            }
            kind = field == 5 ? KIND_STR : KIND_BYTES;
            object = p;
            object_length = value;
            bits = 0;
            number = 0.0;
            p += value;
        } else {
            if (skip_field(ps, &p, end, field, wire, depth) < 0) return -1;
        }
    }
    out->id = id;
    out->bits = bits;
    out->kind = kind;
    out->number = number;
    out->object = object;
    out->object_length = object_length;
    return 0;
}

/* Whether `id` is one of the stats asked for (every stat when none were named). */
static inline int stat_wanted(const Parser *ps, int64_t id) {
    if (ps->wanted == NULL) return 1;
    for (Py_ssize_t w = 0; w < ps->n_wanted; w++)
        if (ps->wanted[w] == id) return 1;
    return 0;
}

/* Decodes one XStat (the bytes [p, end)) of event `event` and appends it to the columns. */
static int parse_stat(Parser *ps, const uint8_t *p, const uint8_t *end, int64_t event,
                      Rows *stats, Rows *objects) {
    Stat stat;
    if (scan_stat(ps, p, end, &stat) < 0) return -1;
    if (!stat_wanted(ps, stat.id)) return 0; /* a stat nobody asked for: checked, not kept */
    int64_t bits = stat.bits;
    if (stat.kind == KIND_STR || stat.kind == KIND_BYTES) {
        /* stat_int of a string is its index among the line's strings. */
        if (rows_reserve(objects) < 0) return -2;
        Py_ssize_t k = objects->count++;
        CELL(objects, OBJ_EVENT, int64_t, k) = event;
        CELL(objects, OBJ_START, int64_t, k) = (int64_t)(stat.object - ps->start);
        CELL(objects, OBJ_LENGTH, int64_t, k) = (int64_t)stat.object_length;
        bits = (int64_t)k;
    }
    if (rows_reserve(stats) < 0) return -2;
    Py_ssize_t row = stats->count++;
    CELL(stats, STAT_EVENT, int64_t, row) = event;
    CELL(stats, STAT_ID, int64_t, row) = stat.id;
    CELL(stats, STAT_KIND, int8_t, row) = stat.kind;
    CELL(stats, STAT_BITS, int64_t, row) = bits;
    CELL(stats, STAT_NUMBER, double, row) = stat.number;
    return 0;
}

/* Decodes one XEvent, number `event` of its line, into `out` (metadata_id, offset_ps,
 * duration_ps, num_occurrences); its stats and strings are appended.
 * Returns 0, -1 for malformed input (ps->error set) or -2 with a Python error set. */
static int parse_event(Parser *ps, const uint8_t *p, const uint8_t *end, int64_t event,
                       int64_t out[4], Rows *stats, Rows *objects) {
    int64_t metadata_id = 0, offset = 0, duration = 0, occurrences = 0;
    while (p < end) {
        uint32_t field;
        int wire;
        uint64_t value;
        if (read_tag(ps, &p, end, &field, &wire) < 0) return -1;
        if (wire == WIRE_VARINT && field >= 1 && field <= 5 && field != 4) {
            if (read_varint(ps, &p, end, &value) < 0) return -1;
            switch (field) {
            case 1: metadata_id = (int64_t)value; break;
            case 2: offset = (int64_t)value; occurrences = 0; break; /* oneof data */
            case 3: duration = (int64_t)value; break;
            case 5: occurrences = (int64_t)value; offset = 0; break; /* oneof data */
            }
        } else if (wire == WIRE_LEN && field == 4) {
            if (read_length(ps, &p, end, &value) < 0) return -1;
            int status = parse_stat(ps, p, p + value, event, stats, objects);
            if (status < 0) return status;
            p += value;
        } else {
            if (skip_field(ps, &p, end, field, wire, DEPTH_LIMIT) < 0) return -1;
        }
    }
    out[0] = metadata_id;
    out[1] = offset;
    out[2] = duration;
    out[3] = occurrences;
    return 0;
}

/* --- Python entry point --------------------------------------------------------------- */

PyDoc_STRVAR(decode_events_doc,
"decode_events(events) -> (events_table, stat columns..., string columns...)\n\n"
"Decodes a list of serialized XEvent messages (bytes-like). Returns bytes-like columns:\n"
"events_table (int64: the metadata_id of every event, then offset_ps, duration_ps and\n"
"num_occurrences likewise),\n"
"stat_event, stat_id (int64), stat_kind (int8), stat_int (int64), stat_float (float64),\n"
"obj_event, obj_start, obj_length (int64: where each str/bytes value lies).\n"
"Raises WireError on malformed input.");

static PyObject *decode_events(PyObject *self, PyObject *arg) {
    (void)self;
    PyObject *seq = PySequence_Fast(arg, "decode_events expects a sequence of bytes");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *result = NULL, *event_columns = NULL, *columns = NULL;
    Rows stats, objects;
    rows_init(&stats, 5, STAT_SIZES);
    rows_init(&objects, 3, OBJ_SIZES);

    if ((size_t)n > PY_SSIZE_T_MAX / 32) {
        PyErr_NoMemory();
        goto done;
    }
    event_columns = PyByteArray_FromStringAndSize(NULL, n * 32);
    if (event_columns == NULL) goto done;
    int64_t *out = (int64_t *)PyByteArray_AS_STRING(event_columns);

    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        Py_buffer view;
        const uint8_t *data;
        Py_ssize_t size;
        int have_view = 0;
        if (PyBytes_Check(item)) {
            data = (const uint8_t *)PyBytes_AS_STRING(item);
            size = PyBytes_GET_SIZE(item);
        } else {
            if (PyObject_GetBuffer(item, &view, PyBUF_SIMPLE) < 0) goto done;
            have_view = 1;
            data = view.buf;
            size = view.len;
        }
        Parser ps = {data, NULL, NULL, 0};
        int64_t fields[4];
        int status = parse_event(&ps, data, data + size, (int64_t)i, fields, &stats, &objects);
        for (int k = 0; k < 4; k++) out[k * n + i] = fields[k];
        if (have_view) PyBuffer_Release(&view);
        if (status == -1) {
            PyErr_Format(WireError, "event %zd is corrupt (%s)", i, ps.error);
            goto done;
        }
        if (status < 0) {
            PyErr_NoMemory();
            goto done;
        }
    }

    columns = PyList_New(0);
    if (columns == NULL || PyList_Append(columns, event_columns) < 0 ||
        rows_take_all(&stats, columns) < 0 || rows_take_all(&objects, columns) < 0)
        goto done;
    result = PyList_AsTuple(columns);

done:
    rows_clear(&stats);
    rows_clear(&objects);
    Py_XDECREF(columns);
    Py_XDECREF(event_columns);
    Py_DECREF(seq);
    return result;
}

PyDoc_STRVAR(decode_line_doc,
"decode_line(line, start=0, max_events=-1, wanted=None)\n"
"    -> (metadata_id, offset_ps, duration_ps, num_occurrences,\n"
"        stat columns..., string columns..., next)\n\n"
"Decodes the events (field 4) of one serialized XLine (bytes-like) in place, without a\n"
"bytes object per event; the line's other fields are skipped. Starts at byte `start`\n"
"and stops after `max_events` events (-1: no limit), returning the byte offset to go on\n"
"from as `next` (the line's length when it is done), so a long line can be read in\n"
"pieces. `wanted` (int64 bytes) keeps only the stats with those metadata ids. The\n"
"columns are as in decode_events, the event columns one buffer each, and obj_start\n"
"counts from the start of the line. Raises WireError on malformed input.");

enum { EVENT_METADATA, EVENT_OFFSET, EVENT_DURATION, EVENT_OCCURRENCES };
static const Py_ssize_t EVENT_SIZES[] = {8, 8, 8, 8};

static PyObject *decode_line(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *line, *wanted_arg = Py_None;
    Py_ssize_t start = 0, max_events = -1;
    if (!PyArg_ParseTuple(args, "O|nnO", &line, &start, &max_events, &wanted_arg)) return NULL;
    Py_buffer view, wanted = {0};
    if (PyObject_GetBuffer(line, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (wanted_arg != Py_None && PyObject_GetBuffer(wanted_arg, &wanted, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    PyObject *result = NULL, *columns = NULL, *next = NULL;
    Rows events, stats, objects;
    rows_init(&events, 4, EVENT_SIZES);
    rows_init(&stats, 5, STAT_SIZES);
    rows_init(&objects, 3, OBJ_SIZES);
    if (start < 0 || start > view.len) {
        PyErr_SetString(PyExc_ValueError, "start is outside the line");
        goto done;
    }
    const uint8_t *p = (const uint8_t *)view.buf + start;
    const uint8_t *end = (const uint8_t *)view.buf + view.len;
    Parser ps = {view.buf, NULL, wanted.buf, wanted.buf != NULL ? wanted.len / 8 : 0};
    int64_t fields[4];
    int status = 0; /* -1: malformed; -2: out of memory */
    /* Room for about the rows the line holds (an event is tens of bytes, a stat about ten),
     * so that the columns rarely grow: growing copies them and touches new pages. */
    Py_ssize_t expected = (end - p) / 32 + 16;
    if (max_events >= 0 && expected > max_events) expected = max_events + 1;
    if (rows_resize(&events, expected) < 0 ||
        rows_resize(&stats, 4 * expected) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    /* No Python object is touched while the events are walked: other threads run meanwhile
     * (the lines of several cores or streams decode at once). */
    Py_BEGIN_ALLOW_THREADS
    while (p < end && (max_events < 0 || events.count < max_events)) {
        uint32_t field;
        int wire;
        uint64_t length;
        if (read_tag(&ps, &p, end, &field, &wire) < 0) { status = -1; break; }
        if (!(field == 4 && wire == WIRE_LEN)) { /* header fields: read by protobuf */
            if (skip_field(&ps, &p, end, field, wire, DEPTH_LIMIT) < 0) { status = -1; break; }
            continue;
        }
        if (read_length(&ps, &p, end, &length) < 0) { status = -1; break; }
        if (rows_reserve(&events) < 0) { status = -2; break; }
        Py_ssize_t row = events.count;
        status = parse_event(&ps, p, p + length, row, fields, &stats, &objects);
        if (status < 0) break;
        for (int k = 0; k < 4; k++) CELL(&events, k, int64_t, row) = fields[k];
        events.count++;
        p += length;
    }
    Py_END_ALLOW_THREADS
    if (status == -1) {
        PyErr_Format(WireError, "event %zd is corrupt (%s)", events.count, ps.error);
        goto done;
    }
    if (status < 0) {
        PyErr_NoMemory();
        goto done;
    }
    next = PyLong_FromSsize_t(p - (const uint8_t *)view.buf);
    columns = PyList_New(0);
    if (next == NULL || columns == NULL || rows_take_all(&events, columns) < 0 ||
        rows_take_all(&stats, columns) < 0 || rows_take_all(&objects, columns) < 0 ||
        PyList_Append(columns, next) < 0)
        goto done;
    result = PyList_AsTuple(columns);
done:
    Py_XDECREF(next);
    Py_XDECREF(columns);
    rows_clear(&events);
    rows_clear(&stats);
    rows_clear(&objects);
    if (wanted.buf != NULL) PyBuffer_Release(&wanted);
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(split_message_doc,
"split_message(buffer, start, end, number, spans=True) -> (spans, rest)\n\n"
"Walks the fields of the message in buffer[start:end] once: spans lists (start, end) of\n"
"each length-delimited field `number` (offsets in buffer; None when not asked for), rest\n"
"is the bytes of every other field, in order (a message protobuf can decode without\n"
"those fields: a line's header without its events). Raises WireError on malformed input.");

static PyObject *split_message(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *buffer;
    Py_ssize_t start, stop;
    unsigned int number;
    int want_spans = 1;
    if (!PyArg_ParseTuple(args, "OnnI|p", &buffer, &start, &stop, &number, &want_spans))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *spans = NULL, *rest = NULL, *result = NULL;
    if (start < 0 || stop < start || stop > view.len) {
        PyErr_SetString(PyExc_ValueError, "start and end are outside the buffer");
        goto done;
    }
    const uint8_t *base = (const uint8_t *)view.buf;
    const uint8_t *p = base + start, *end = base + stop;
    Parser ps = {view.buf, NULL, NULL, 0};
    spans = want_spans ? PyList_New(0) : Py_NewRef(Py_None);
    /* The rest is at most the whole message; shrunk to size at the end. */
    rest = PyBytes_FromStringAndSize(NULL, stop - start);
    if (spans == NULL || rest == NULL) goto done;
    char *out = PyBytes_AS_STRING(rest);
    Py_ssize_t used = 0;
    while (p < end) {
        const uint8_t *field_start = p;
        uint32_t field;
        int wire;
        if (read_tag(&ps, &p, end, &field, &wire) < 0) goto malformed;
        if (field == number && wire == WIRE_LEN) {
            uint64_t length;
            if (read_length(&ps, &p, end, &length) < 0) goto malformed;
            if (!want_spans) {
                p += length;
                continue;
            }
            PyObject *span = Py_BuildValue("(nn)", (Py_ssize_t)(p - base),
                                           (Py_ssize_t)(p - base + (Py_ssize_t)length));
            if (span == NULL) goto done;
            int failed = PyList_Append(spans, span);
            Py_DECREF(span);
            if (failed < 0) goto done;
            p += length;
            continue;
        }
        if (skip_field(&ps, &p, end, field, wire, DEPTH_LIMIT) < 0) goto malformed;
        memcpy(out + used, field_start, (size_t)(p - field_start));
        used += p - field_start;
    }
    if (_PyBytes_Resize(&rest, used) < 0) goto done;
    result = PyTuple_Pack(2, spans, rest);
    goto done;
malformed:
    PyErr_Format(WireError, "corrupt (%s)", ps.error);
done:
    Py_XDECREF(spans);
    Py_XDECREF(rest);
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(line_has_stats_doc,
"line_has_stats(line, start, end, wanted) -> bool\n\n"
"Whether an event of the XLine in line[start:end] has a stat whose metadata_id is in\n"
"wanted (int64 buffer). Walks events and stats without decoding them; malformed input\n"
"answers True, so that decoding the line reports it.");

static int stats_match(Parser *ps, const uint8_t *p, const uint8_t *end, const int64_t *wanted,
                       Py_ssize_t n_wanted) {
    /* p..end: one XEvent. 1: a wanted stat; 0: none; -1: malformed. */
    while (p < end) {
        uint32_t field;
        int wire;
        uint64_t length;
        if (read_tag(ps, &p, end, &field, &wire) < 0) return -1;
        if (!(field == 4 && wire == WIRE_LEN)) {
            if (skip_field(ps, &p, end, field, wire, DEPTH_LIMIT) < 0) return -1;
            continue;
        }
        if (read_length(ps, &p, end, &length) < 0) return -1;
        const uint8_t *q = p, *stat_end = p + length;
        while (q < stat_end) {
            uint32_t stat_field;
            int stat_wire;
            if (read_tag(ps, &q, stat_end, &stat_field, &stat_wire) < 0) return -1;
            if (stat_field == 1 && stat_wire == WIRE_VARINT) {
                uint64_t id;
                if (read_varint(ps, &q, stat_end, &id) < 0) return -1;
                for (Py_ssize_t k = 0; k < n_wanted; k++)
                    if ((uint64_t)wanted[k] == id) return 1;
            } else if (skip_field(ps, &q, stat_end, stat_field, stat_wire, DEPTH_LIMIT) < 0) {
                return -1;
            }
        }
        p = stat_end;
    }
    return 0;
}

static PyObject *line_has_stats(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *line, *wanted_arg;
    Py_ssize_t start, stop;
    if (!PyArg_ParseTuple(args, "OnnO", &line, &start, &stop, &wanted_arg)) return NULL;
    Py_buffer view, wanted;
    if (PyObject_GetBuffer(line, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(wanted_arg, &wanted, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    int found = 1; /* malformed: True */
    if (start < 0 || stop < start || stop > view.len) {
        PyErr_SetString(PyExc_ValueError, "start and end are outside the buffer");
        PyBuffer_Release(&wanted);
        PyBuffer_Release(&view);
        return NULL;
    }
    const uint8_t *p = (const uint8_t *)view.buf + start, *end = (const uint8_t *)view.buf + stop;
    Parser ps = {view.buf, NULL, NULL, 0};
    const int64_t *ids = (const int64_t *)wanted.buf;
    Py_ssize_t n_ids = wanted.len / 8;
    for (;;) {
        if (p >= end) {
            found = 0;
            break;
        }
        uint32_t field;
        int wire;
        uint64_t length;
        if (read_tag(&ps, &p, end, &field, &wire) < 0) break;
        if (!(field == 4 && wire == WIRE_LEN)) {
            if (skip_field(&ps, &p, end, field, wire, DEPTH_LIMIT) < 0) break;
            continue;
        }
        if (read_length(&ps, &p, end, &length) < 0) break;
        int status = stats_match(&ps, p, p + length, ids, n_ids);
        if (status != 0) break; /* found, or malformed: both True */
        p += length;
    }
    PyBuffer_Release(&wanted);
    PyBuffer_Release(&view);
    return PyBool_FromLong(found);
}

/* --- lines held for a pass without the GIL --------------------------------------------- */

typedef struct {
    Py_buffer *views;   /* a view of each line's bytes */
    int64_t *stamps_ns; /* each line's timestamp_ns */
    Py_ssize_t held;    /* views taken (released by held_lines_release) */
} HeldLines;

/* Takes a buffer view and the timestamp of each of the `n` lines (`lines` and `stamps` from
   PySequence_Fast); -1 with an exception set (what was taken is released all the same). */
static int held_lines_take(HeldLines *h, PyObject *lines, PyObject *stamps, Py_ssize_t n) {
    h->views = PyMem_Calloc((size_t)(n ? n : 1), sizeof *h->views);
    h->stamps_ns = PyMem_Calloc((size_t)(n ? n : 1), sizeof *h->stamps_ns);
    if (h->views == NULL || h->stamps_ns == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (; h->held < n; h->held++) {
        Py_ssize_t i = h->held;
        h->stamps_ns[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(stamps, i));
        if (h->stamps_ns[i] == -1 && PyErr_Occurred()) return -1;
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(lines, i), &h->views[i], PyBUF_SIMPLE) <
            0)
            return -1;
    }
    return 0;
}

static void held_lines_release(HeldLines *h) {
    for (Py_ssize_t i = 0; i < h->held; i++) PyBuffer_Release(&h->views[i]);
    PyMem_Free(h->views);
    PyMem_Free(h->stamps_ns);
}

/* The `k` stat ids of `ids_seq` (ints, or None for a stat the plane does not have) as `ids`
   and `have`; -1 with an exception set. */
static int stat_ids_of(PyObject *ids_seq, int k, int64_t *ids, int *have) {
    for (int j = 0; j < k; j++) {
        PyObject *id = PySequence_Fast_GET_ITEM(ids_seq, j);
        if (id == Py_None) continue;
        ids[j] = PyLong_AsLongLong(id);
        if (ids[j] == -1 && PyErr_Occurred()) return -1;
        have[j] = 1;
    }
    return 0;
}

/* --- span sums: a line's events summed per (window, metadata id) in one pass --------- */

/* An int64 -> index map (open addressing; the index -1 marks an empty slot). */
typedef struct {
    int64_t *keys;
    Py_ssize_t *values;
    Py_ssize_t capacity, count; /* capacity: a power of two */
} Map;

static inline uint64_t mix64(uint64_t x) { /* splitmix64's finalizer */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static int map_init(Map *m, Py_ssize_t capacity) {
    m->capacity = capacity;
    m->count = 0;
    m->keys = PyMem_RawMalloc((size_t)capacity * sizeof *m->keys);
    m->values = PyMem_RawMalloc((size_t)capacity * sizeof *m->values);
    if (m->keys == NULL || m->values == NULL) return -1;
    for (Py_ssize_t i = 0; i < capacity; i++) m->values[i] = -1;
    return 0;
}

static void map_free(Map *m) {
    PyMem_RawFree(m->keys);
    PyMem_RawFree(m->values);
    m->keys = NULL;
    m->values = NULL;
}

static inline Py_ssize_t map_slot(const Map *m, int64_t key) {
    Py_ssize_t mask = m->capacity - 1, i = (Py_ssize_t)(mix64((uint64_t)key) & (uint64_t)mask);
    while (m->values[i] >= 0 && m->keys[i] != key) i = (i + 1) & mask;
    return i;
}

/* The index of `key`, given `fresh` (and *added set) when it is new; -1: out of memory. */
static inline Py_ssize_t map_get(Map *m, int64_t key, Py_ssize_t fresh, int *added) {
    Py_ssize_t i = map_slot(m, key);
    *added = 0;
    if (m->values[i] >= 0) return m->values[i];
    if (2 * (m->count + 1) > m->capacity) { /* grow at half full */
        Map bigger = {0};
        if (m->capacity > PY_SSIZE_T_MAX / 32 || map_init(&bigger, 2 * m->capacity) < 0) {
            map_free(&bigger);
            return -1;
        }
        for (Py_ssize_t k = 0; k < m->capacity; k++) {
            if (m->values[k] < 0) continue;
            Py_ssize_t j = map_slot(&bigger, m->keys[k]);
            bigger.keys[j] = m->keys[k];
            bigger.values[j] = m->values[k];
        }
        bigger.count = m->count;
        map_free(m);
        *m = bigger;
        i = map_slot(m, key);
    }
    m->keys[i] = key;
    m->values[i] = fresh;
    m->count++;
    *added = 1;
    return fresh;
}

/* The sums of one (window, metadata id) cell, or of one metadata id (whole line). */
enum { SUM_OCCURRENCES, SUM_TIME, SUM_SELF, SUM_STAT, SUM_SCALED, SUM_COUNT };
/* Columns: the key column(s), then the sums (SUM_SELF an int64, the others float64). */
enum { IDS_ID, IDS_SUMS };
enum { CELLS_WINDOW, CELLS_CODE, CELLS_SUMS };
static const Py_ssize_t IDS_SIZES[] = {8, 8, 8, 8, 8, 8};
static const Py_ssize_t CELLS_SIZES[] = {8, 8, 8, 8, 8, 8, 8};

/* read_tag and read_length with the one-byte case (nearly every tag and length of a
 * kernel or launch event) inline; the same results and errors. */
static inline int fast_tag(Parser *ps, const uint8_t **p, const uint8_t *end, uint32_t *field,
                           int *wire) {
    if (*p < end && **p < 0x80) {
        uint8_t tag = *(*p)++;
        *field = tag >> 3;
        *wire = tag & 7;
        if (*field == 0) {
            ps->error = "field number 0";
            return -1;
        }
        return 0;
    }
    return read_tag(ps, p, end, field, wire);
}

static inline int fast_length(Parser *ps, const uint8_t **p, const uint8_t *end,
                              uint64_t *length) {
    if (*p < end && **p < 0x80) {
        *length = *(*p)++;
        if (*length > (uint64_t)(end - *p)) {
            ps->error = "length past the end";
            return -1;
        }
        return 0;
    }
    return read_length(ps, p, end, length);
}

/* The next event of a serialized XLine from *p, the line's other fields skipped: 1 with the
 * event's bytes [*event, *p) (ps->start set to them); 0 at the line's end; -1 for malformed
 * input. */
static inline int next_event(Parser *ps, const uint8_t **p, const uint8_t *end,
                             const uint8_t **event) {
    while (*p < end) {
        uint32_t field;
        int wire;
        uint64_t length;
        if (fast_tag(ps, p, end, &field, &wire) < 0) return -1;
        if (!(field == 4 && wire == WIRE_LEN)) {
            if (skip_field(ps, p, end, field, wire, DEPTH_LIMIT) < 0) return -1;
            continue;
        }
        if (fast_length(ps, p, end, &length) < 0) return -1;
        *event = ps->start = *p;
        *p += length;
        return 1;
    }
    return 0;
}

/* The common XStat (metadata_id, then one int64/uint64/ref value: two short varints) read
 * straight off its bytes [p, end); -1 for any other shape, which scan_stat then reads (it
 * gives the same for this one). */
static inline int varint_stat(const uint8_t *p, const uint8_t *end, Stat *out) {
    uint64_t id = 0, bits = 0;
    int shift = 0;
    if (p >= end || *p++ != 0x08) return -1; /* field 1, varint */
    for (;;) { /* at most 9 bytes: no bits past 63 to drop */
        if (p >= end || shift > 56) return -1;
        uint8_t byte = *p++;
        id |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) break;
        shift += 7;
    }
    if (p >= end) return -1;
    uint8_t tag = *p++;
    if (tag != 0x18 && tag != 0x20 && tag != 0x38) return -1; /* fields 3, 4, 7: varints */
    shift = 0;
    for (;;) {
        if (p >= end || shift > 56) return -1;
        uint8_t byte = *p++;
        bits |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) break;
        shift += 7;
    }
    if (p != end) return -1;
    out->id = (int64_t)id;
    out->bits = (int64_t)bits;
    out->kind = tag == 0x38 ? KIND_REF : KIND_INT;
    out->number = 0.0;
    out->object = NULL;
    out->object_length = 0;
    return 0;
}

/* Which of the wanted stats a stat id is, for ids below STAT_SLOTS (-1: none of them). */
#define STAT_SLOTS 256

/* The wanted stats' slots of a line: `slot_of` filled and 1, or 0 where a table cannot say
 * (an id past STAT_SLOTS, or wanted twice): then the ids are compared one by one. */
static int stat_slots(int8_t *slot_of, const int64_t *ids, const int *have, int n) {
    memset(slot_of, -1, STAT_SLOTS);
    for (int j = 0; j < n; j++) {
        if (!have[j]) continue;
        if (ids[j] < 0 || ids[j] >= STAT_SLOTS || slot_of[ids[j]] >= 0) return 0;
        slot_of[ids[j]] = (int8_t)j;
    }
    return 1;
}

/* The wanted stats of one event: the last int and the last double value of each. */
enum { WANT_OFFSET, WANT_DURATION, WANT_STAT, WANT_SCALE, WANT_COUNT };
typedef struct {
    int has_int[WANT_COUNT], has_double[WANT_COUNT];
    int64_t int_value[WANT_COUNT];
    double double_value[WANT_COUNT];
} Wanted;

/* A span of a line: its time, and where it is summed. */
typedef struct {
    int64_t begin, stop;
    Py_ssize_t code, cell; /* cell -1: in no window */
} Span;

/* An open span of the nesting stack: its time, its children's, and where it is summed. */
typedef struct {
    int64_t end, duration, children;
    Py_ssize_t code, cell; /* cell -1: in no window */
} Open;

#define MAX_TIME_PS ((int64_t)1 << 62) /* event_table.MAX_TIME_PS */
#define EXACT_SUM ((uint64_t)1 << 53)  /* integer sums below this are exact as doubles */
#define MAX_MAGNITUDE 1e200            /* event_table.MAX_MAGNITUDE */

/* event_table.EventTable.numbers of one event: a double wins over an int; inf is absent. */
static double stat_number(const Wanted *w, int k) {
    double value;
    if (w->has_double[k]) value = w->double_value[k];
    else if (w->has_int[k]) value = (double)w->int_value[k];
    else return Py_NAN;
    if (isinf(value)) return Py_NAN;
    if (value > MAX_MAGNITUDE) return MAX_MAGNITUDE;
    if (value < -MAX_MAGNITUDE) return -MAX_MAGNITUDE;
    return value;
}

/* An int or double stat's value as wanted stat k's latest (its kind's). */
static inline void keep_wanted(Wanted *w, int k, const Stat *stat) {
    if (stat->kind == KIND_INT) {
        w->has_int[k] = 1;
        w->int_value[k] = stat->bits;
    } else {
        w->has_double[k] = 1;
        w->double_value[k] = stat->number;
    }
}

/* Decodes one XEvent for span_sums: its fields, and the wanted stats' values (`slot_of`:
 * the wanted ids' slots, stat_slots'; NULL: the ids compared one by one). */
static int scan_event(Parser *ps, const uint8_t *p, const uint8_t *end, const int64_t *ids,
                      const int *have, const int8_t *slot_of, int64_t fields[4], Wanted *w) {
    int64_t metadata_id = 0, offset = 0, duration = 0, occurrences = 0;
    for (int k = 0; k < WANT_COUNT; k++) w->has_int[k] = w->has_double[k] = 0; /* values: unread */
    while (p < end) {
        uint32_t field;
        int wire;
        uint64_t value;
        if (fast_tag(ps, &p, end, &field, &wire) < 0) return -1;
        if (wire == WIRE_VARINT && field >= 1 && field <= 5 && field != 4) {
            if (read_varint(ps, &p, end, &value) < 0) return -1;
            switch (field) {
            case 1: metadata_id = (int64_t)value; break;
            case 2: offset = (int64_t)value; occurrences = 0; break; /* oneof data */
            case 3: duration = (int64_t)value; break;
            case 5: occurrences = (int64_t)value; offset = 0; break; /* oneof data */
            }
        } else if (wire == WIRE_LEN && field == 4) {
            Stat stat;
            if (fast_length(ps, &p, end, &value) < 0) return -1;
            if (varint_stat(p, p + value, &stat) < 0 && scan_stat(ps, p, p + value, &stat) < 0)
                return -1;
            p += value;
            if (stat.kind != KIND_INT && stat.kind != KIND_DOUBLE) continue;
            if (slot_of != NULL) {
                int k = stat.id >= 0 && stat.id < STAT_SLOTS ? slot_of[stat.id] : -1;
                if (k >= 0) keep_wanted(w, k, &stat);
                continue;
            }
            for (int k = 0; k < WANT_COUNT; k++)
                if (have[k] && ids[k] == stat.id) keep_wanted(w, k, &stat);
        } else {
            if (skip_field(ps, &p, end, field, wire, DEPTH_LIMIT) < 0) return -1;
        }
    }
    fields[0] = metadata_id;
    fields[1] = offset;
    fields[2] = duration;
    fields[3] = occurrences;
    return 0;
}

/* A new zeroed row of `r` (columns from `first` on are sums, 8 bytes each: zeroed as one
 * store, not a memset call each). */
static inline int new_row(Rows *r, int first, Py_ssize_t *row) {
    if (rows_reserve(r) < 0) return -1;
    *row = r->count++;
    for (int c = first; c < r->n_columns; c++) ((uint64_t *)r->data[c])[*row] = 0;
    return 0;
}

/* What span_sums keeps while it walks the lines. */
typedef struct {
    Rows ids, cells;
    Map codes;
    /* A cell is found by its id's latest cell (`latest`: the window and row of each id's
     * latest cell) while windows only go forward, as they do along a sorted line; once a
     * later line goes back, through a map of every cell (`hashed`). */
    Map cell_of;
    int hashed;
    Py_ssize_t max_window;
    int64_t *latest_window;
    Py_ssize_t *latest_cell, latest_capacity;
    Open *stack;
    Py_ssize_t depth, stack_capacity;
    Span *spans; /* the line's spans, for the nesting */
    Py_ssize_t n_spans, spans_capacity;
    uint64_t self_total; /* all self times: past EXACT_SUM, sums could round */
    int64_t events, min_begin, max_end;
} Sums;

/* The cell of (window, code): found, or made with zero sums; -1: out of memory. */
static Py_ssize_t cell_of(Sums *s, Py_ssize_t window, Py_ssize_t code) {
    if (code >= s->latest_capacity) { /* one entry per id */
        Py_ssize_t capacity = s->latest_capacity ? 2 * s->latest_capacity : 1024;
        while (capacity <= code) capacity *= 2;
        int64_t *w = PyMem_RawRealloc(s->latest_window, (size_t)capacity * sizeof *w);
        if (w != NULL) s->latest_window = w;
        Py_ssize_t *c = PyMem_RawRealloc(s->latest_cell, (size_t)capacity * sizeof *c);
        if (c != NULL) s->latest_cell = c;
        if (w == NULL || c == NULL) return -1;
        for (Py_ssize_t k = s->latest_capacity; k < capacity; k++) s->latest_window[k] = -1;
        s->latest_capacity = capacity;
    }
    if (s->latest_window[code] == window) return s->latest_cell[code];
    int64_t key = ((int64_t)window << 31) | code;
    if (!s->hashed && window < s->max_window) { /* back to an earlier window: map them all */
        for (Py_ssize_t row = 0; row < s->cells.count; row++) {
            int64_t old = (CELL(&s->cells, CELLS_WINDOW, int64_t, row) << 31) |
                          CELL(&s->cells, CELLS_CODE, int64_t, row);
            int added;
            if (map_get(&s->cell_of, old, row, &added) < 0) return -1;
        }
        s->hashed = 1;
    }
    Py_ssize_t cell = s->cells.count;
    int added = 1;
    if (s->hashed) {
        cell = map_get(&s->cell_of, key, s->cells.count, &added);
        if (cell < 0) return -1;
    }
    if (added) { /* new: no earlier cell has this window and id */
        Py_ssize_t row;
        if (new_row(&s->cells, CELLS_SUMS, &row) < 0) return -1;
        CELL(&s->cells, CELLS_WINDOW, int64_t, row) = window;
        CELL(&s->cells, CELLS_CODE, int64_t, row) = code;
    }
    if (window > s->max_window) s->max_window = window;
    s->latest_window[code] = window;
    s->latest_cell[code] = cell;
    return cell;
}

static inline void add_sums(Rows *r, int first, Py_ssize_t row, double occurrences,
                            int64_t duration, double stat, double scale) {
    CELL(r, first + SUM_OCCURRENCES, double, row) += occurrences;
    CELL(r, first + SUM_TIME, double, row) += (double)duration;
    CELL(r, first + SUM_STAT, double, row) += stat;
    CELL(r, first + SUM_SCALED, double, row) += (double)duration * scale;
}

/* A span closes: its self time (its time less its children's) goes to its sums. */
static inline int close_span(Sums *s, const Open *span) {
    int64_t self = span->duration - span->children;
    if (self < 0) return -1; /* cannot happen for nested spans; let the array path say */
    s->self_total += (uint64_t)self;
    if (s->self_total >= EXACT_SUM) return -1;
    CELL(&s->ids, IDS_SUMS + SUM_SELF, int64_t, span->code) += self;
    if (span->cell >= 0) CELL(&s->cells, CELLS_SUMS + SUM_SELF, int64_t, span->cell) += self;
    return 0;
}

/* Whether span a comes before span b in (begin, -duration) order, ties in line order. */
static inline int span_before(const Span *spans, Py_ssize_t a, Py_ssize_t b) {
    if (spans[a].begin != spans[b].begin) return spans[a].begin < spans[b].begin;
    if (spans[a].stop != spans[b].stop) return spans[a].stop > spans[b].stop;
    return a < b;
}

/* `order` (0..n-1) sorted by span_before: a stable merge of the ascending runs already
 * there (a line out of order is usually a few events out of place). */
static int sort_spans(const Span *spans, Py_ssize_t n, Py_ssize_t **order_out) {
    Py_ssize_t *order = PyMem_RawMalloc((size_t)(n ? n : 1) * sizeof *order);
    Py_ssize_t *other = PyMem_RawMalloc((size_t)(n ? n : 1) * sizeof *other);
    if (order == NULL || other == NULL) {
        PyMem_RawFree(order);
        PyMem_RawFree(other);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) order[i] = i;
    for (;;) { /* merge neighbouring runs until one is left */
        Py_ssize_t runs = 0, i = 0;
        while (i < n) {
            Py_ssize_t mid = i + 1;
            while (mid < n && span_before(spans, order[mid - 1], order[mid])) mid++;
            Py_ssize_t stop = mid < n ? mid + 1 : n;
            while (stop < n && span_before(spans, order[stop - 1], order[stop])) stop++;
            Py_ssize_t x = i, y = mid, k = i;
            while (x < mid && y < stop)
                other[k++] = span_before(spans, order[y], order[x]) ? order[y++] : order[x++];
            while (x < mid) other[k++] = order[x++];
            while (y < stop) other[k++] = order[y++];
            runs++;
            i = stop;
        }
        Py_ssize_t *swap = order;
        order = other;
        other = swap;
        if (runs <= 1) break;
    }
    PyMem_RawFree(other);
    *order_out = order;
    return 0;
}

/* Self times of the line's spans (`s->spans`, in (begin, -duration) order through
 * `order`, NULL: already in order), each added to its sums. 0; 1: spans that overlap
 * partially (not nesting) or a sum that could round; -1: out of memory. */
static int nest_spans(Sums *s, const Py_ssize_t *order) {
    s->depth = 0;
    for (Py_ssize_t k = 0; k < s->n_spans; k++) {
        const Span *span = &s->spans[order != NULL ? order[k] : k];
        int64_t duration = span->stop - span->begin;
        /* Close the spans that end before it; the innermost open one holds it. */
        while (s->depth > 0) {
            Open *top = &s->stack[s->depth - 1];
            if (top->end >= span->stop) break;  /* holds it */
            if (top->end > span->begin) return 1; /* a partial overlap: not nesting */
            if (close_span(s, top) < 0) return 1;
            s->depth--;
        }
        if (s->depth > 0) s->stack[s->depth - 1].children += duration;
        if (s->depth == s->stack_capacity) {
            Py_ssize_t capacity = s->stack_capacity ? 2 * s->stack_capacity : 64;
            Open *bigger = PyMem_RawRealloc(s->stack, (size_t)capacity * sizeof *bigger);
            if (bigger == NULL) return -1;
            s->stack = bigger;
            s->stack_capacity = capacity;
        }
        s->stack[s->depth++] = (Open){span->stop, duration, 0, span->code, span->cell};
    }
    while (s->depth > 0) {
        if (close_span(s, &s->stack[s->depth - 1]) < 0) return 1;
        s->depth--;
    }
    return 0;
}

/* Sums the events of one serialized XLine. 0: done; 1: the array path must do these lines
 * (malformed, out of range, partially overlapping spans, sums that could round); -1: out
 * of memory. Touches no Python object (the GIL is released). */
static int sum_line(Sums *s, const uint8_t *p, const uint8_t *end, int64_t timestamp_ns,
                    const int64_t *ids, const int *have, const int8_t *slot_of,
                    const int64_t *win_begin,
                    const int64_t *win_end, Py_ssize_t windows) {
    Parser ps = {p, NULL, NULL, 0};
    int64_t fields[4], prev_begin = 0, prev_end = 0, last_mid = 0;
    Py_ssize_t window = -1, last_code = -1;
    int in_order = 1;
    Wanted w;
    if (timestamp_ns > MAX_TIME_PS / 1000 || timestamp_ns < -(MAX_TIME_PS / 1000)) return 1;
    int64_t base_ps = timestamp_ns * 1000;
    s->n_spans = 0;
    Py_ssize_t expected = (end - p) / 32 + 16; /* about the line's events: rarely grown */
    if (expected > s->spans_capacity) {
        Span *room = PyMem_RawRealloc(s->spans, (size_t)expected * sizeof *room);
        if (room == NULL) return -1;
        s->spans = room;
        s->spans_capacity = expected;
    }
    const uint8_t *event;
    int found = 0;
    while ((found = next_event(&ps, &p, end, &event)) > 0) {
        if (scan_event(&ps, event, p, ids, have, slot_of, fields, &w) < 0) return 1;
        int64_t offset = fields[1], duration = fields[2];
        if (offset > MAX_TIME_PS || offset < -MAX_TIME_PS) return 1;
        if (duration < 0 || duration > MAX_TIME_PS) return 1;
        int64_t begin = (int64_t)((uint64_t)offset + (uint64_t)base_ps);
        if (w.has_int[WANT_OFFSET] && w.has_int[WANT_DURATION]) { /* device time wins */
            begin = w.int_value[WANT_OFFSET];
            duration = w.int_value[WANT_DURATION];
            if (duration < 0) return 1;
        }
        int64_t stop;
        if (__builtin_add_overflow(begin, duration, &stop)) return 1;
        if (s->n_spans > 0 && (begin < prev_begin || (begin == prev_begin && stop > prev_end)))
            in_order = 0; /* not in (begin, -duration) order: sorted for the nesting */
        double occurrences = fields[3] > 0 ? (double)fields[3] : 1.0;
        double stat = stat_number(&w, WANT_STAT), scale = stat_number(&w, WANT_SCALE);
        if (isnan(stat)) stat = 0.0;
        if (isnan(scale)) scale = 1.0;

        /* The metadata id's row. */
        Py_ssize_t code = last_code;
        if (code < 0 || fields[0] != last_mid) {
            int added;
            code = map_get(&s->codes, fields[0], s->ids.count, &added);
            if (code < 0) return -1;
            if (added) {
                Py_ssize_t row;
                if (new_row(&s->ids, IDS_SUMS, &row) < 0) return -1;
                CELL(&s->ids, IDS_ID, int64_t, row) = fields[0];
            }
            last_mid = fields[0];
            last_code = code;
        }
        /* The window it starts in: the last one starting at or before it, while open (the
         * windows ascend: a pointer that moves on, or a binary search for a step back). */
        if (s->n_spans > 0 && begin < prev_begin) {
            Py_ssize_t lo = 0, hi = windows; /* the first window starting after begin */
            while (lo < hi) {
                Py_ssize_t mid = lo + (hi - lo) / 2;
                if (win_begin[mid] <= begin) lo = mid + 1;
                else hi = mid;
            }
            window = lo - 1;
        }
        while (window + 1 < windows && win_begin[window + 1] <= begin) window++;
        prev_begin = begin;
        prev_end = stop;
        Py_ssize_t cell = -1;
        if (window >= 0 && begin < win_end[window]) {
            if (code >= ((Py_ssize_t)1 << 31)) return 1;
            cell = cell_of(s, window, code);
            if (cell < 0) return -1;
        }
        add_sums(&s->ids, IDS_SUMS, code, occurrences, duration, stat, scale);
        if (cell >= 0) add_sums(&s->cells, CELLS_SUMS, cell, occurrences, duration, stat, scale);

        if (s->n_spans == s->spans_capacity) {
            Py_ssize_t capacity = s->spans_capacity ? 2 * s->spans_capacity : 4096;
            Span *bigger = PyMem_RawRealloc(s->spans, (size_t)capacity * sizeof *bigger);
            if (bigger == NULL) return -1;
            s->spans = bigger;
            s->spans_capacity = capacity;
        }
        s->spans[s->n_spans++] = (Span){begin, stop, code, cell};
        if (s->events == 0 || begin < s->min_begin) s->min_begin = begin;
        if (s->events == 0 || stop > s->max_end) s->max_end = stop;
        s->events++;
    }
    if (found < 0) return 1;
    if (in_order) return nest_spans(s, NULL);
    Py_ssize_t *order;
    if (sort_spans(s->spans, s->n_spans, &order) < 0) return -1;
    int status = nest_spans(s, order);
    PyMem_RawFree(order);
    return status;
}

PyDoc_STRVAR(span_sums_doc,
"span_sums(lines, timestamps_ns, stat_ids, window_begin, window_end)\n"
"    -> None or (events, min_begin_ps, max_end_ps, id columns..., cell columns...)\n\n"
"One pass over the events of serialized XLines (bytes-like, each with its timestamp_ns):\n"
"their times (device_offset_ps/device_duration_ps where an event has both) and self times\n"
"(time less that of the spans nested in it, line by line), summed per metadata id and per\n"
"(window, metadata id), an event in the window it starts in (window_begin: int64 bytes,\n"
"ascending; window_end likewise; None: no windows). stat_ids: four ids or None:\n"
"device_offset_ps, device_duration_ps, a stat summed as it is (absent: 0) and one that\n"
"scales the time (absent: 1). Per metadata id, in order of first appearance: id (int64),\n"
"then the sums occurrences, time_ps, self_ps (int64), stat, scaled time (float64); per\n"
"cell: window, id row (int64), the same sums. None when the lines are malformed, out of\n"
"range or hold partially overlapping spans, or a sum could round: then the array path\n"
"(which says what is wrong) must do them.");

/* Cells reserved before a pass at most (7 columns of 8 bytes: 7 MB); more grow as needed. */
#define RESERVED_CELLS ((Py_ssize_t)1 << 17)

static PyObject *span_sums(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *lines_arg, *stamps_arg, *ids_arg, *begin_arg, *end_arg;
    if (!PyArg_ParseTuple(args, "OOOOO", &lines_arg, &stamps_arg, &ids_arg, &begin_arg, &end_arg))
        return NULL;
    PyObject *lines = NULL, *stamps = NULL, *ids_seq = NULL, *result = NULL, *columns = NULL;
    Py_buffer wb = {0}, we = {0};
    HeldLines held = {0};
    Sums s;
    memset(&s, 0, sizeof s);
    s.max_window = -1;
    int64_t ids[WANT_COUNT] = {0};
    int have[WANT_COUNT] = {0};
    lines = PySequence_Fast(lines_arg, "span_sums expects a sequence of lines");
    stamps = PySequence_Fast(stamps_arg, "span_sums expects a sequence of timestamps");
    ids_seq = PySequence_Fast(ids_arg, "span_sums expects a sequence of stat ids");
    if (lines == NULL || stamps == NULL || ids_seq == NULL) goto done;
    if (PySequence_Fast_GET_SIZE(stamps) != PySequence_Fast_GET_SIZE(lines) ||
        PySequence_Fast_GET_SIZE(ids_seq) != WANT_COUNT) {
        PyErr_SetString(PyExc_ValueError, "a timestamp per line and four stat ids");
        goto done;
    }
    if (stat_ids_of(ids_seq, WANT_COUNT, ids, have) < 0) goto done;
    Py_ssize_t windows = 0;
    if (begin_arg != Py_None) {
        if (PyObject_GetBuffer(begin_arg, &wb, PyBUF_SIMPLE) < 0 ||
            PyObject_GetBuffer(end_arg, &we, PyBUF_SIMPLE) < 0)
            goto done;
        if (wb.len != we.len || wb.len % 8) {
            PyErr_SetString(PyExc_ValueError, "window_begin and window_end: int64, same length");
            goto done;
        }
        windows = wb.len / 8;
        for (Py_ssize_t k = 1; k < windows; k++) {
            if (((const int64_t *)wb.buf)[k] < ((const int64_t *)wb.buf)[k - 1]) {
                PyErr_SetString(PyExc_ValueError, "window_begin is not ascending");
                goto done;
            }
        }
        if (windows >= ((Py_ssize_t)1 << 31)) {
            Py_INCREF(Py_None);
    result = Py_None;
            goto done;
        }
    }
    rows_init(&s.ids, 1 + SUM_COUNT, IDS_SIZES);
    rows_init(&s.cells, 2 + SUM_COUNT, CELLS_SIZES);
    if (map_init(&s.codes, 1024) < 0 || map_init(&s.cell_of, 4096) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n_lines = PySequence_Fast_GET_SIZE(lines);
    if (held_lines_take(&held, lines, stamps, n_lines) < 0) goto done;
    if (windows > 0) { /* room for a cell per event, about (sum_line's guess), made once */
        Py_ssize_t expected = 0;
        for (Py_ssize_t i = 0; i < n_lines; i++) expected += held.views[i].len / 32 + 16;
        if (expected > RESERVED_CELLS) expected = RESERVED_CELLS;
        if (expected > 1024 && rows_resize(&s.cells, expected) < 0) {
            PyErr_NoMemory();
            goto done;
        }
    }
    int status = 0;
    int8_t slot_of[STAT_SLOTS];
    const int8_t *slots = stat_slots(slot_of, ids, have, WANT_COUNT) ? slot_of : NULL;
    /* The lines are walked without the GIL: the cores of a host are summed at once. */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n_lines && status == 0; i++) {
        const uint8_t *start = held.views[i].buf;
        status = sum_line(&s, start, start + held.views[i].len, held.stamps_ns[i], ids, have,
                          slots, wb.buf, we.buf, windows);
    }
    Py_END_ALLOW_THREADS
    if (status < 0) {
        PyErr_NoMemory();
        goto done;
    }
    if (status > 0) {
        Py_INCREF(Py_None);
    result = Py_None;
        goto done;
    }
    columns = Py_BuildValue("[LLL]", (long long)s.events, (long long)s.min_begin,
                            (long long)s.max_end);
    if (columns == NULL || rows_take_all(&s.ids, columns) < 0 ||
        rows_take_all(&s.cells, columns) < 0)
        goto done;
    result = PyList_AsTuple(columns);
done:
    held_lines_release(&held);
    Py_XDECREF(columns);
    rows_clear(&s.ids);
    rows_clear(&s.cells);
    map_free(&s.codes);
    map_free(&s.cell_of);
    PyMem_RawFree(s.latest_window);
    PyMem_RawFree(s.latest_cell);
    PyMem_RawFree(s.spans);
    PyMem_RawFree(s.stack);
    if (wb.obj != NULL) PyBuffer_Release(&wb);
    if (we.obj != NULL) PyBuffer_Release(&we);
    Py_XDECREF(lines);
    Py_XDECREF(stamps);
    Py_XDECREF(ids_seq);
    return result;
}

/* --- XLA:CPU host sums ------------------------------------------------------------------ */

#define HOST_MAX_STATS 16 /* integer stats host_integers reads at once */

PyDoc_STRVAR(host_integers_doc,
"host_integers(stat_event, stat_id, stat_kind, stat_int, ids, present, values)\n\n"
"Writes the integer stats `ids` (int64 bytes, k <= 16 ids) of a decoded line's stat columns\n"
"(as decode_line gives them: stat_event, stat_id, stat_int int64, stat_kind int8;\n"
"bytes-like) into per-event columns, in one pass over the stats instead of one per id:\n"
"present and values are sequences of k writable columns of zeros, one per id, of the\n"
"events' count (bool and int64). A stat counts where its kind is INT; of an event's\n"
"several, the last one (EventTable.integers' answer). Raises ValueError when the columns\n"
"disagree in length or an event index is out of range.");

static PyObject *host_integers(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *event_arg, *id_arg, *kind_arg, *int_arg, *ids_arg, *present_arg, *values_arg;
    if (!PyArg_ParseTuple(args, "OOOOOOO", &event_arg, &id_arg, &kind_arg, &int_arg, &ids_arg,
                          &present_arg, &values_arg))
        return NULL;
    Py_buffer ev = {0}, id = {0}, kind = {0}, bits = {0}, ids = {0};
    Py_buffer present[HOST_MAX_STATS] = {{0}}, values[HOST_MAX_STATS] = {{0}};
    uint8_t *has[HOST_MAX_STATS];
    int64_t *out[HOST_MAX_STATS];
    PyObject *result = NULL, *present_seq = NULL, *values_seq = NULL;
    Py_ssize_t k = 0;
    if (PyObject_GetBuffer(event_arg, &ev, PyBUF_SIMPLE) < 0 ||
        PyObject_GetBuffer(id_arg, &id, PyBUF_SIMPLE) < 0 ||
        PyObject_GetBuffer(kind_arg, &kind, PyBUF_SIMPLE) < 0 ||
        PyObject_GetBuffer(int_arg, &bits, PyBUF_SIMPLE) < 0 ||
        PyObject_GetBuffer(ids_arg, &ids, PyBUF_SIMPLE) < 0)
        goto done;
    present_seq = PySequence_Fast(present_arg, "host_integers expects a sequence of columns");
    values_seq = PySequence_Fast(values_arg, "host_integers expects a sequence of columns");
    if (present_seq == NULL || values_seq == NULL) goto done;
    Py_ssize_t n = kind.len, n_events = -1;
    k = ids.len / 8;
    if (ev.len != 8 * n || id.len != 8 * n || bits.len != 8 * n || ids.len % 8 != 0 ||
        k > HOST_MAX_STATS || PySequence_Fast_GET_SIZE(present_seq) != k ||
        PySequence_Fast_GET_SIZE(values_seq) != k) {
        k = 0;
        PyErr_SetString(PyExc_ValueError, "host_integers: columns of different lengths");
        goto done;
    }
    for (Py_ssize_t j = 0; j < k; j++) {
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(present_seq, j), &present[j],
                               PyBUF_SIMPLE | PyBUF_WRITABLE) < 0 ||
            PyObject_GetBuffer(PySequence_Fast_GET_ITEM(values_seq, j), &values[j],
                               PyBUF_SIMPLE | PyBUF_WRITABLE) < 0)
            goto done;
        if (n_events < 0) n_events = present[j].len;
        if (present[j].len != n_events || values[j].len != 8 * n_events) {
            PyErr_SetString(PyExc_ValueError, "host_integers: columns of different lengths");
            goto done;
        }
        has[j] = present[j].buf;
        out[j] = values[j].buf;
    }
    const int64_t *event = ev.buf, *stat = id.buf, *value = bits.buf, *wanted = ids.buf;
    const int8_t *kinds = kind.buf;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t row = 0; row < n && !bad; row++) {
        if (kinds[row] != KIND_INT) continue;
        int64_t e = event[row];
        for (Py_ssize_t j = 0; j < k; j++) {
            if (stat[row] != wanted[j]) continue;
            if (e < 0 || e >= n_events) { bad = 1; break; }
            has[j][e] = 1;
            out[j][e] = value[row];
        }
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "host_integers: an event index is out of range");
        goto done;
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    for (Py_ssize_t j = 0; j < k; j++) {
        if (present[j].obj != NULL) PyBuffer_Release(&present[j]);
        if (values[j].obj != NULL) PyBuffer_Release(&values[j]);
    }
    Py_XDECREF(present_seq);
    Py_XDECREF(values_seq);
    if (ev.obj != NULL) PyBuffer_Release(&ev);
    if (id.obj != NULL) PyBuffer_Release(&id);
    if (kind.obj != NULL) PyBuffer_Release(&kind);
    if (bits.obj != NULL) PyBuffer_Release(&bits);
    if (ids.obj != NULL) PyBuffer_Release(&ids);
    return result;
}

/* --- end of XLA:CPU host sums ----------------------------------------------------------- */

/* --- GPU kernel sums: the kernels of GPU stream lines summed per op and per (step, op) -- */

/* The stats of a kernel that kernel_sums reads (the order of its stat_ids). */
enum { KS_HLO_OP, KS_PROGRAM, KS_TF_OP, KS_CORRELATION, KS_FLOPS, KS_BYTES, KS_STATS };

/* One kernel (or host) event as the wire gives it: its fields, and each wanted stat's last
 * value and how often the event has it (at most SCAN_STATS stats). */
#define SCAN_STATS 8
typedef struct {
    int64_t metadata_id, offset, duration;
    int count[SCAN_STATS];
    int8_t kind[SCAN_STATS];
    int64_t bits[SCAN_STATS];
    double number[SCAN_STATS];
} KernelEvent;

/* Decodes one event's fields and its `n` wanted stats (`slot_of`: their slots, stat_slots';
 * NULL: the ids compared one by one). */
static int scan_kernel(Parser *ps, const uint8_t *p, const uint8_t *end, const int64_t *ids,
                       const int *have, int n, const int8_t *slot_of, KernelEvent *k) {
    memset(k->count, 0, sizeof k->count);
    memset(k->kind, 0, sizeof k->kind);
    k->metadata_id = k->offset = k->duration = 0;
    while (p < end) {
        uint32_t field;
        int wire;
        uint64_t value;
        if (fast_tag(ps, &p, end, &field, &wire) < 0) return -1;
        if (wire == WIRE_VARINT && field >= 1 && field <= 5 && field != 4) {
            if (read_varint(ps, &p, end, &value) < 0) return -1;
            switch (field) {
            case 1: k->metadata_id = (int64_t)value; break;
            case 2: k->offset = (int64_t)value; break; /* oneof data: num_occurrences clears */
            case 3: k->duration = (int64_t)value; break;
            case 5: k->offset = 0; break;
            }
        } else if (wire == WIRE_LEN && field == 4) {
            Stat stat;
            if (fast_length(ps, &p, end, &value) < 0) return -1;
            if (varint_stat(p, p + value, &stat) < 0 && scan_stat(ps, p, p + value, &stat) < 0)
                return -1;
            p += value;
            if (slot_of != NULL) { /* the line's table of wanted ids */
                int j = stat.id >= 0 && stat.id < STAT_SLOTS ? slot_of[stat.id] : -1;
                if (j >= 0) {
                    k->count[j]++;
                    k->kind[j] = stat.kind;
                    k->bits[j] = stat.bits;
                    k->number[j] = stat.number;
                }
                continue;
            }
            for (int j = 0; j < n; j++) {
                if (!have[j] || ids[j] != stat.id) continue;
                k->count[j]++;
                k->kind[j] = stat.kind;
                k->bits[j] = stat.bits;
                k->number[j] = stat.number;
            }
        } else {
            if (skip_field(ps, &p, end, field, wire, DEPTH_LIMIT) < 0) return -1;
        }
    }
    return 0;
}

/* A numeric stat as EventTable.numbers then nan_to_num give it: 0 where absent or not a
 * number, inf absent, clipped to +-MAX_MAGNITUDE. */
static double kernel_number(const KernelEvent *k, int j) {
    double value;
    if (k->kind[j] == KIND_DOUBLE) value = k->number[j];
    else if (k->kind[j] == KIND_INT) value = (double)k->bits[j];
    else return 0.0;
    if (isnan(value) || isinf(value)) return 0.0;
    if (value > MAX_MAGNITUDE) return MAX_MAGNITUDE;
    if (value < -MAX_MAGNITUDE) return -MAX_MAGNITUDE;
    return value;
}

/* What attributes a kernel: its plane, program, hlo_op and tf_op refs, and metadata id. */
typedef struct {
    int64_t plane, program, hlo_kind, hlo, tf_kind, tf, metadata;
} ComboKey;

typedef struct {
    ComboKey key;
    int64_t op, kernel; /* the op (-1: none) and the kernel name's code, from Python */
    int used;
} Combo;

typedef struct {
    Combo *slots;
    Py_ssize_t capacity, count;
} ComboMap;

static inline uint64_t combo_hash(const ComboKey *k) {
    uint64_t h = mix64((uint64_t)k->plane + 0x9e3779b97f4a7c15ULL);
    h = mix64(h ^ (uint64_t)k->program);
    h = mix64(h ^ ((uint64_t)k->hlo_kind << 56) ^ (uint64_t)k->hlo);
    h = mix64(h ^ ((uint64_t)k->tf_kind << 56) ^ (uint64_t)k->tf);
    return mix64(h ^ (uint64_t)k->metadata);
}

static Combo *combo_slot(ComboMap *m, const ComboKey *key) {
    Py_ssize_t mask = m->capacity - 1, i = (Py_ssize_t)(combo_hash(key) & (uint64_t)mask);
    while (m->slots[i].used && memcmp(&m->slots[i].key, key, sizeof *key) != 0)
        i = (i + 1) & mask;
    return &m->slots[i];
}

/* Room for one more combo (grown at half full); -1: out of memory. */
static int combo_reserve(ComboMap *m) {
    if (m->slots != NULL && 2 * (m->count + 1) <= m->capacity) return 0;
    Py_ssize_t capacity = m->capacity ? 2 * m->capacity : 256;
    ComboMap bigger = {PyMem_RawCalloc((size_t)capacity, sizeof(Combo)), capacity, m->count};
    if (bigger.slots == NULL) return -1;
    for (Py_ssize_t k = 0; k < m->capacity; k++)
        if (m->slots[k].used) *combo_slot(&bigger, &m->slots[k].key) = m->slots[k];
    PyMem_RawFree(m->slots);
    *m = bigger;
    return 0;
}

/* The first index of sorted a[0..n) whose value is >= key (upper: > key), galloped from
 * `hint` (the last answer: along a line, launches and steps mostly move forward). */
#define GALLOP(name, type, before)                                                          \
    static Py_ssize_t name(const type *a, Py_ssize_t n, type key, Py_ssize_t hint) {        \
        Py_ssize_t lo, hi, probe, step = 1;                                                 \
        if (hint < 0) hint = 0;                                                             \
        if (hint > n) hint = n;                                                             \
        if (hint < n && before(a[hint], key)) {                                             \
            lo = hint + 1;                                                                  \
            probe = lo;                                                                     \
            while (probe < n && before(a[probe], key)) {                                    \
                lo = probe + 1;                                                             \
                probe = lo + step;                                                          \
                step *= 2;                                                                  \
            }                                                                               \
            hi = probe < n ? probe : n;                                                     \
        } else {                                                                            \
            hi = hint;                                                                      \
            probe = hi - 1;                                                                 \
            while (probe >= 0 && !before(a[probe], key)) {                                  \
                hi = probe;                                                                 \
                probe = hi - step;                                                          \
                step *= 2;                                                                  \
            }                                                                               \
            lo = probe < 0 ? 0 : probe + 1;                                                 \
        }                                                                                   \
        while (lo < hi) {                                                                   \
            Py_ssize_t mid = lo + (hi - lo) / 2;                                            \
            if (before(a[mid], key)) lo = mid + 1;                                          \
            else hi = mid;                                                                  \
        }                                                                                   \
        return lo;                                                                          \
    }
#define KS_LESS(x, key) ((x) < (key))
#define KS_NOT_AFTER(x, key) ((x) <= (key))
GALLOP(lower_bound_u64, uint64_t, KS_LESS)
GALLOP(upper_bound_i64, int64_t, KS_NOT_AFTER)

typedef struct {
    int64_t begin, end;
} Interval;

/* Output columns (each 8 bytes a row). */
enum { OP_ID, OP_SUMS };                 /* per op: op, then the KSUM_* sums */
enum { CELL_STEP, CELL_OP, CELL_SUMS };  /* per (step, op) cell */
enum { KSUM_COUNT, KSUM_EXECUTIONS, KSUM_TIME, KSUM_FLOPS, KSUM_BYTES, KSUM_N };
enum { UN_KERNEL, UN_COUNT, UN_TIME };   /* kernels without an op, by kernel name */
enum { PL_FIRST, PL_LAST, PL_SUMMED, PL_BUSY };
enum { ST_TOTAL, ST_MISSING };
static const Py_ssize_t EIGHT[] = {8, 8, 8, 8, 8, 8, 8, 8};

/* What kernel_sums keeps while it walks the lines. */
typedef struct {
    PyObject *attribute;   /* Python: (plane, program, hlo kind, hlo, tf kind, tf, metadata)
                              -> (op, kernel code), once per new combo */
    PyThreadState *thread; /* the GIL is released but for those calls */
    ComboMap combos;
    Rows ops, cells, unattributed, planes, steps;
    Py_ssize_t *op_row, *op_latest_cell, *kernel_row, op_capacity, kernel_capacity;
    int64_t *op_latest_step;
    Map cell_of;         /* (step << 32 | op) -> cell row, once the grid is too big */
    uint32_t *grid;      /* per (step, op): its cell row + 1 (0: none yet) */
    Py_ssize_t grid_stride;
    int hashed;
    Py_ssize_t n_planes, only;
    Interval **intervals; /* per plane: its kernels' spans, one sorted run per line */
    Py_ssize_t *n_intervals, *interval_capacity, **run_starts, *n_runs, *runs_capacity;
    const uint64_t *launch_ids;
    const int64_t *launch_ps;
    Py_ssize_t n_launches, launch_hint, window_hint;
    uint8_t *ran; /* per launch: a kernel carries its id */
    Map unlaunched; /* correlation ids of kernels no launch has */
    const int64_t *win_begin, *win_end;
    Py_ssize_t windows;
    int64_t *cell_first, *cell_last; /* per (step, plane) */
    uint8_t *cell_used;
    int64_t events, unclaimed;
    uint64_t unclaimed_ps;
} KernelSums;

/* Grows a per-code index array (entries -1) to hold `code`; -1: out of memory. */
static int grow_index(Py_ssize_t **index, Py_ssize_t *capacity, Py_ssize_t code) {
    if (code < *capacity) return 0;
    Py_ssize_t size = *capacity ? 2 * *capacity : 256;
    while (size <= code) size *= 2;
    Py_ssize_t *bigger = PyMem_RawRealloc(*index, (size_t)size * sizeof *bigger);
    if (bigger == NULL) return -1;
    for (Py_ssize_t k = *capacity; k < size; k++) bigger[k] = -1;
    *index = bigger;
    *capacity = size;
    return 0;
}

/* Grows the per-op arrays to hold `op`; -1: out of memory. */
static int grow_ops(KernelSums *s, int64_t op) {
    if (op < s->op_capacity) return 0;
    Py_ssize_t size = s->op_capacity ? 2 * s->op_capacity : 256;
    while (size <= op) size *= 2;
    Py_ssize_t *row = PyMem_RawRealloc(s->op_row, (size_t)size * sizeof *row);
    if (row != NULL) s->op_row = row;
    Py_ssize_t *cell = PyMem_RawRealloc(s->op_latest_cell, (size_t)size * sizeof *cell);
    if (cell != NULL) s->op_latest_cell = cell;
    int64_t *step = PyMem_RawRealloc(s->op_latest_step, (size_t)size * sizeof *step);
    if (step != NULL) s->op_latest_step = step;
    if (row == NULL || cell == NULL || step == NULL) return -1;
    for (Py_ssize_t k = s->op_capacity; k < size; k++) row[k] = cell[k] = step[k] = -1;
    s->op_capacity = size;
    return 0;
}

/* The op and kernel code of a combo, asking Python for a new one. 0; 1: Python failed
 * (its error set); -1: out of memory. */
static int attribute_kernel(KernelSums *s, const ComboKey *key, int64_t *op, int64_t *kernel) {
    Combo *slot = combo_slot(&s->combos, key);
    if (slot->used) {
        *op = slot->op;
        *kernel = slot->kernel;
        return 0;
    }
    if (combo_reserve(&s->combos) < 0) return -1;
    slot = combo_slot(&s->combos, key);
    PyEval_RestoreThread(s->thread);
    PyObject *answer = PyObject_CallFunction(s->attribute, "LLLLLLL", (long long)key->plane,
                                             (long long)key->program, (long long)key->hlo_kind,
                                             (long long)key->hlo, (long long)key->tf_kind,
                                             (long long)key->tf, (long long)key->metadata);
    long long got_op = -1, got_kernel = -1;
    int failed = answer == NULL || !PyArg_ParseTuple(answer, "LL", &got_op, &got_kernel);
    if (!failed && (got_op < -1 || got_op >= ((long long)1 << 31) || got_kernel < 0 ||
                    got_kernel >= ((long long)1 << 31))) {
        PyErr_SetString(PyExc_ValueError, "attribute: op or kernel code out of range");
        failed = 1;
    }
    Py_XDECREF(answer);
    s->thread = PyEval_SaveThread();
    if (failed) return 1;
    slot->key = *key;
    slot->op = got_op;
    slot->kernel = got_kernel;
    slot->used = 1;
    s->combos.count++;
    *op = got_op;
    *kernel = got_kernel;
    return 0;
}

static inline void add_kernel_sums(Rows *r, int first, Py_ssize_t row, double start,
                                   int64_t duration, double flops, double bytes) {
    CELL(r, first + KSUM_COUNT, double, row) += 1.0;
    CELL(r, first + KSUM_EXECUTIONS, double, row) += start;
    CELL(r, first + KSUM_TIME, double, row) += (double)duration;
    CELL(r, first + KSUM_FLOPS, double, row) += flops;
    CELL(r, first + KSUM_BYTES, double, row) += bytes;
}

/* Up to this many (step, op) slots, cells are found in a dense grid (a step's ops are few
 * and known early), beyond through a map. */
#define KS_DENSE_CELLS ((Py_ssize_t)1 << 24)

/* The grid widened to hold op `op` (or, too big, every cell moved to the map); -1: out of
 * memory. */
static int widen_grid(KernelSums *s, int64_t op) {
    Py_ssize_t stride = s->grid_stride ? s->grid_stride : 16;
    while (stride <= op) stride *= 2;
    if (s->windows > KS_DENSE_CELLS / stride) { /* too many: the map from now on */
        for (Py_ssize_t row = 0; row < s->cells.count; row++) {
            int64_t key = (CELL(&s->cells, CELL_STEP, int64_t, row) << 32) |
                          CELL(&s->cells, CELL_OP, int64_t, row);
            int added;
            if (map_get(&s->cell_of, key, row, &added) < 0) return -1;
        }
        PyMem_RawFree(s->grid);
        s->grid = NULL;
        s->hashed = 1;
        return 0;
    }
    uint32_t *grid = PyMem_RawCalloc((size_t)s->windows * (size_t)stride, sizeof *grid);
    if (grid == NULL) return -1;
    for (Py_ssize_t w = 0; s->grid != NULL && w < s->windows; w++)
        memcpy(grid + w * stride, s->grid + w * s->grid_stride, (size_t)s->grid_stride * sizeof *grid);
    PyMem_RawFree(s->grid);
    s->grid = grid;
    s->grid_stride = stride;
    return 0;
}

/* The (step, op) cell's row, made with zero sums when new; -1: out of memory. */
static Py_ssize_t kernel_cell(KernelSums *s, int64_t step, int64_t op) {
    if (s->op_latest_step[op] == step) return s->op_latest_cell[op];
    if (!s->hashed && op >= s->grid_stride && widen_grid(s, op) < 0) return -1;
    Py_ssize_t row;
    if (!s->hashed) {
        uint32_t *slot = &s->grid[step * s->grid_stride + op];
        if (*slot == 0) {
            if (s->cells.count >= (Py_ssize_t)UINT32_MAX) return -1;
            if (new_row(&s->cells, CELL_SUMS, &row) < 0) return -1;
            CELL(&s->cells, CELL_STEP, int64_t, row) = step;
            CELL(&s->cells, CELL_OP, int64_t, row) = op;
            *slot = (uint32_t)(row + 1);
        }
        row = (Py_ssize_t)*slot - 1;
    } else {
        int added;
        row = map_get(&s->cell_of, (step << 32) | op, s->cells.count, &added);
        if (row < 0) return -1;
        if (added) {
            if (new_row(&s->cells, CELL_SUMS, &row) < 0) return -1;
            CELL(&s->cells, CELL_STEP, int64_t, row) = step;
            CELL(&s->cells, CELL_OP, int64_t, row) = op;
        }
    }
    s->op_latest_step[op] = step;
    s->op_latest_cell[op] = row;
    return row;
}

/* Sums the kernels of one serialized XLine of GPU plane `plane`. 0: done; 1: the array path
 * must do the lines (malformed, out of range, out of time order, a stat given twice, a
 * string-valued hlo_op or tf_op, kernels sharing a correlation id: graph launches); 2: the
 * attribute callback raised; -1: out of memory. */
static int sum_kernel_line(KernelSums *s, const uint8_t *p, const uint8_t *end,
                           int64_t timestamp_ns, Py_ssize_t plane, const int64_t *ids,
                           const int *have) {
    Parser ps = {p, NULL, NULL, 0};
    int64_t prev_begin = 0, prev_op = 0, run_kernel = 0;
    Py_ssize_t on_line = 0;
    KernelEvent k;
    int8_t table[STAT_SLOTS];
    const int8_t *slot_of = stat_slots(table, ids, have, KS_STATS) ? table : NULL;
    if (timestamp_ns > MAX_TIME_PS / 1000 || timestamp_ns < -(MAX_TIME_PS / 1000)) return 1;
    int64_t base_ps = timestamp_ns * 1000;
    /* The line's spans are one run of the plane's intervals. */
    if (s->n_runs[plane] == s->runs_capacity[plane]) {
        Py_ssize_t capacity = s->runs_capacity[plane] ? 2 * s->runs_capacity[plane] : 16;
        Py_ssize_t *bigger = PyMem_RawRealloc(s->run_starts[plane], (size_t)capacity * sizeof *bigger);
        if (bigger == NULL) return -1;
        s->run_starts[plane] = bigger;
        s->runs_capacity[plane] = capacity;
    }
    s->run_starts[plane][s->n_runs[plane]++] = s->n_intervals[plane];
    Py_ssize_t expected = s->n_intervals[plane] + (end - p) / 32 + 16;
    if (expected > s->interval_capacity[plane]) {
        Interval *room = PyMem_RawRealloc(s->intervals[plane], (size_t)expected * sizeof *room);
        if (room == NULL) return -1;
        s->intervals[plane] = room;
        s->interval_capacity[plane] = expected;
    }
    int keep = s->only < 0 || s->only == plane;
    const uint8_t *event;
    int found = 0;
    while ((found = next_event(&ps, &p, end, &event)) > 0) {
        if (scan_kernel(&ps, event, p, ids, have, KS_STATS, slot_of, &k) < 0) return 1;
        for (int j = 0; j < KS_STATS; j++)
            if (k.count[j] > 1) return 1; /* which value counts: the array path's rule */
        if (k.offset > MAX_TIME_PS || k.offset < -MAX_TIME_PS) return 1;
        if (k.duration < 0 || k.duration > MAX_TIME_PS) return 1;
        int64_t begin = k.offset + base_ps, stop;
        if (__builtin_add_overflow(begin, k.duration, &stop)) return 1;
        if (on_line > 0 && begin < prev_begin) return 1; /* out of time order */

        /* Its op, from its attribution key. */
        ComboKey key = {plane, 0, 0, 0, 0, 0, k.metadata_id};
        if (k.kind[KS_PROGRAM] == KIND_INT) key.program = k.bits[KS_PROGRAM];
        for (int j = 0; j < 2; j++) {
            int stat = j == 0 ? KS_HLO_OP : KS_TF_OP;
            if (k.kind[stat] == KIND_STR) return 1; /* strings: the array path */
            if (k.kind[stat] != KIND_REF) continue; /* absent (other kinds: absent too) */
            if (j == 0) {
                key.hlo_kind = KIND_REF;
                key.hlo = k.bits[stat];
            } else {
                key.tf_kind = KIND_REF;
                key.tf = k.bits[stat];
            }
        }
        int64_t op, kernel;
        int status = attribute_kernel(s, &key, &op, &kernel);
        if (status != 0) return status > 0 ? 2 : -1;
        if (op >= 0 && grow_ops(s, op) < 0) return -1;
        /* Does it start an execution of its op (execution_starts, per line in time order)? */
        double start = 1.0;
        if (on_line == 0 || op != prev_op) run_kernel = kernel;
        else start = kernel == run_kernel ? 1.0 : 0.0;
        prev_op = op;
        prev_begin = begin;
        on_line++;

        /* Its launch, and the step the launch is in. */
        int has_correlation = k.kind[KS_CORRELATION] == KIND_INT;
        uint64_t correlation = (uint64_t)k.bits[KS_CORRELATION];
        Py_ssize_t slot = -1;
        if (has_correlation) {
            Py_ssize_t at = lower_bound_u64(s->launch_ids, s->n_launches, correlation,
                                            s->launch_hint);
            s->launch_hint = at;
            if (at < s->n_launches && s->launch_ids[at] == correlation) {
                slot = at;
                if (s->ran[slot]) return 1; /* a second kernel of the launch: a graph */
                s->ran[slot] = 1;
            } else {
                int added;
                if (map_get(&s->unlaunched, (int64_t)correlation, 0, &added) < 0) return -1;
                if (!added) return 1;
            }
        }
        double flops = kernel_number(&k, KS_FLOPS), bytes = kernel_number(&k, KS_BYTES);

        /* The whole profile's sums, the plane's time and spans. */
        if (keep && op >= 0) {
            Py_ssize_t row = s->op_row[op];
            if (row < 0) {
                if (new_row(&s->ops, OP_SUMS, &row) < 0) return -1;
                CELL(&s->ops, OP_ID, int64_t, row) = op;
                s->op_row[op] = row;
            }
            add_kernel_sums(&s->ops, OP_SUMS, row, start, k.duration, flops, bytes);
        }
        if (keep && op < 0) {
            if (grow_index(&s->kernel_row, &s->kernel_capacity, kernel) < 0) return -1;
            Py_ssize_t row = s->kernel_row[kernel];
            if (row < 0) {
                if (new_row(&s->unattributed, UN_COUNT, &row) < 0) return -1;
                CELL(&s->unattributed, UN_KERNEL, int64_t, row) = kernel;
                s->kernel_row[kernel] = row;
            }
            CELL(&s->unattributed, UN_COUNT, double, row) += 1.0;
            CELL(&s->unattributed, UN_TIME, double, row) += (double)k.duration;
        }
        int64_t *first = &CELL(&s->planes, PL_FIRST, int64_t, plane);
        int64_t *last = &CELL(&s->planes, PL_LAST, int64_t, plane);
        if (begin < *first) *first = begin;
        if (stop > *last) *last = stop;
        CELL(&s->planes, PL_SUMMED, double, plane) += (double)k.duration;
        if (s->n_intervals[plane] == s->interval_capacity[plane]) {
            Py_ssize_t capacity = 2 * s->interval_capacity[plane] + 16;
            Interval *bigger = PyMem_RawRealloc(s->intervals[plane], (size_t)capacity * sizeof *bigger);
            if (bigger == NULL) return -1;
            s->intervals[plane] = bigger;
            s->interval_capacity[plane] = capacity;
        }
        s->intervals[plane][s->n_intervals[plane]++] = (Interval){begin, stop};
        s->events++;

        /* Its step (gpu_steps): the one its launch is in. */
        if (s->win_begin == NULL) continue;
        int64_t step = -1;
        if (slot >= 0) {
            int64_t launch = s->launch_ps[slot];
            Py_ssize_t after = upper_bound_i64(s->win_begin, s->windows, launch, s->window_hint);
            s->window_hint = after;
            if (after > 0 && launch < s->win_end[after - 1]) step = after - 1;
        }
        if (!keep) continue;
        if (step < 0) {
            s->unclaimed++;
            s->unclaimed_ps += (uint64_t)k.duration;
            continue;
        }
        Py_ssize_t at = step * s->n_planes + plane;
        if (!s->cell_used[at] || begin < s->cell_first[at]) s->cell_first[at] = begin;
        if (!s->cell_used[at] || stop > s->cell_last[at]) s->cell_last[at] = stop;
        s->cell_used[at] = 1;
        if (op < 0) continue;
        Py_ssize_t cell = kernel_cell(s, step, op);
        if (cell < 0) return -1;
        add_kernel_sums(&s->cells, CELL_SUMS, cell, start, k.duration, flops, bytes);
    }
    if (found < 0) return 1;
    return 0;
}

/* The union of a plane's spans (stream_overlap's busy time): its runs merged into one
 * sorted run, then swept; each piece's length added in time order. -1: out of memory. */
static int busy_time(KernelSums *s, Py_ssize_t plane) {
    Interval *a = s->intervals[plane];
    Py_ssize_t n = s->n_intervals[plane], runs = s->n_runs[plane];
    Py_ssize_t *bounds = s->run_starts[plane];
    if (n == 0) return 0;
    Interval *other = PyMem_RawMalloc((size_t)n * sizeof *other);
    Py_ssize_t *next = PyMem_RawMalloc((size_t)(runs + 1) * sizeof *next);
    if (other == NULL || next == NULL) {
        PyMem_RawFree(other);
        PyMem_RawFree(next);
        return -1;
    }
    while (runs > 1) { /* merge neighbouring runs, ties from the earlier run first */
        Py_ssize_t merged = 0;
        for (Py_ssize_t r = 0; r < runs; r += 2) {
            Py_ssize_t x = bounds[r], mid = r + 1 < runs ? bounds[r + 1] : n;
            Py_ssize_t stop = r + 2 < runs ? bounds[r + 2] : n, y = mid, k = x;
            next[merged++] = x;
            while (x < mid && y < stop) other[k++] = a[y].begin < a[x].begin ? a[y++] : a[x++];
            while (x < mid) other[k++] = a[x++];
            while (y < stop) other[k++] = a[y++];
        }
        Interval *swap = a;
        a = other;
        other = swap;
        memcpy(bounds, next, (size_t)merged * sizeof *bounds);
        runs = merged;
    }
    double busy = 0.0;
    int64_t piece_begin = a[0].begin, reach = a[0].end;
    for (Py_ssize_t i = 1; i < n; i++) {
        if (a[i].begin > reach) { /* touching spans make one piece */
            busy += (double)(reach - piece_begin);
            piece_begin = a[i].begin;
            reach = a[i].end;
        } else if (a[i].end > reach) {
            reach = a[i].end;
        }
    }
    busy += (double)(reach - piece_begin);
    CELL(&s->planes, PL_BUSY, double, plane) = busy;
    /* Whichever buffer holds the result, the other goes. */
    PyMem_RawFree(other);
    s->intervals[plane] = a;
    PyMem_RawFree(next);
    return 0;
}

PyDoc_STRVAR(kernel_sums_doc,
"kernel_sums(lines, timestamps_ns, planes, stat_ids, attribute, launch_ids, launch_ps,\n"
"            window_begin, window_end, n_planes, only)\n"
"    -> None or (events, unclaimed, unclaimed_ps, op columns..., cell columns...,\n"
"                unattributed columns..., plane columns..., step columns...)\n\n"
"One pass over the kernels of the GPU stream lines (bytes-like, each with its\n"
"timestamp_ns and plane index < n_planes; stat_ids per line: the ids of hlo_op,\n"
"program_id, tf_op, correlation_id, flops, bytes_accessed or None). attribute(plane,\n"
"program_id, hlo kind, hlo ref, tf kind, tf ref, metadata_id) -> (op or -1, kernel name\n"
"code) is called once per new combination (kind 3: a ref, 0: absent). A kernel's launch\n"
"is the one with its correlation id (launch_ids: uint64 bytes, ascending; launch_ps:\n"
"int64); its step the window holding the launch (window_begin/_end: int64 bytes,\n"
"ascending; None: no steps). only: the one plane kept (-1: all). Sums are float64 added\n"
"in kernel order: per op (op, count, executions, time, flops, bytes: kernels of `only`\n"
"with an op), per (step, op) cell likewise, per kernel code without an op (code, count,\n"
"time), per plane (first begin, last end: int64; summed time and busy time, the union),\n"
"per step (device time, launches without a kernel: int64). None where the array path must\n"
"do the lines: malformed, out of range or out of time order, a stat twice in an event,\n"
"string hlo_op/tf_op values, or kernels sharing a correlation id (graph launches).");

static PyObject *kernel_sums(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *lines_arg, *stamps_arg, *planes_arg, *ids_arg, *attribute;
    PyObject *launch_ids_arg, *launch_ps_arg, *begin_arg, *end_arg;
    Py_ssize_t n_planes, only;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOnn", &lines_arg, &stamps_arg, &planes_arg, &ids_arg,
                          &attribute, &launch_ids_arg, &launch_ps_arg, &begin_arg, &end_arg,
                          &n_planes, &only))
        return NULL;
    PyObject *lines = NULL, *stamps = NULL, *planes = NULL, *ids_seq = NULL, *result = NULL;
    PyObject *columns = NULL;
    Py_buffer li = {0}, lp = {0}, wb = {0}, we = {0}, *views = NULL;
    int64_t *stamps_ns = NULL, (*line_ids)[KS_STATS] = NULL;
    int (*line_have)[KS_STATS] = NULL;
    Py_ssize_t *line_plane = NULL, held = 0;
    KernelSums s;
    memset(&s, 0, sizeof s);
    s.attribute = attribute;
    if (n_planes < 1 || n_planes > ((Py_ssize_t)1 << 20) || only >= n_planes) {
        PyErr_SetString(PyExc_ValueError, "n_planes out of range, or only not below it");
        return NULL;
    }
    s.n_planes = n_planes;
    s.only = only < 0 ? -1 : only;
    lines = PySequence_Fast(lines_arg, "kernel_sums expects a sequence of lines");
    stamps = PySequence_Fast(stamps_arg, "kernel_sums expects a sequence of timestamps");
    planes = PySequence_Fast(planes_arg, "kernel_sums expects a sequence of planes");
    ids_seq = PySequence_Fast(ids_arg, "kernel_sums expects a sequence of stat ids");
    if (lines == NULL || stamps == NULL || planes == NULL || ids_seq == NULL) goto done;
    Py_ssize_t n_lines = PySequence_Fast_GET_SIZE(lines);
    if (PySequence_Fast_GET_SIZE(stamps) != n_lines || PySequence_Fast_GET_SIZE(planes) != n_lines ||
        PySequence_Fast_GET_SIZE(ids_seq) != n_lines) {
        PyErr_SetString(PyExc_ValueError, "a timestamp, plane and stat ids per line");
        goto done;
    }
    if (PyObject_GetBuffer(launch_ids_arg, &li, PyBUF_SIMPLE) < 0 ||
        PyObject_GetBuffer(launch_ps_arg, &lp, PyBUF_SIMPLE) < 0)
        goto done;
    if (li.len != lp.len || li.len % 8) {
        PyErr_SetString(PyExc_ValueError, "launch_ids and launch_ps: 8 bytes each, same length");
        goto done;
    }
    s.launch_ids = li.buf;
    s.launch_ps = lp.buf;
    s.n_launches = li.len / 8;
    for (Py_ssize_t k = 1; k < s.n_launches; k++) {
        if (s.launch_ids[k] <= s.launch_ids[k - 1]) {
            PyErr_SetString(PyExc_ValueError, "launch_ids is not ascending and unique");
            goto done;
        }
    }
    if (begin_arg != Py_None) {
        if (PyObject_GetBuffer(begin_arg, &wb, PyBUF_SIMPLE) < 0 ||
            PyObject_GetBuffer(end_arg, &we, PyBUF_SIMPLE) < 0)
            goto done;
        if (wb.len != we.len || wb.len % 8) {
            PyErr_SetString(PyExc_ValueError, "window_begin and window_end: int64, same length");
            goto done;
        }
        s.windows = wb.len / 8;
        s.win_begin = wb.buf;
        s.win_end = we.buf;
        for (Py_ssize_t k = 1; k < s.windows; k++) {
            if (s.win_begin[k] < s.win_begin[k - 1]) {
                PyErr_SetString(PyExc_ValueError, "window_begin is not ascending");
                goto done;
            }
        }
        if (s.windows >= ((Py_ssize_t)1 << 31)) {
            result = Py_NewRef(Py_None);
            goto done;
        }
    }
    rows_init(&s.ops, OP_SUMS + KSUM_N, EIGHT);
    rows_init(&s.cells, CELL_SUMS + KSUM_N, EIGHT);
    rows_init(&s.unattributed, 3, EIGHT);
    rows_init(&s.planes, 4, EIGHT);
    rows_init(&s.steps, 2, EIGHT);
    if (map_init(&s.cell_of, 4096) < 0 || map_init(&s.unlaunched, 1024) < 0 ||
        combo_reserve(&s.combos) < 0 || rows_resize(&s.planes, n_planes) < 0 ||
        rows_resize(&s.steps, s.windows) < 0)
        goto no_memory;
    s.planes.count = n_planes;
    for (Py_ssize_t p = 0; p < n_planes; p++) {
        CELL(&s.planes, PL_FIRST, int64_t, p) = INT64_MAX;
        CELL(&s.planes, PL_LAST, int64_t, p) = INT64_MIN;
        CELL(&s.planes, PL_SUMMED, double, p) = 0.0;
        CELL(&s.planes, PL_BUSY, double, p) = 0.0;
    }
    size_t cells = (size_t)(s.windows ? s.windows : 1) * (size_t)n_planes;
    s.cell_first = PyMem_RawMalloc(cells * sizeof *s.cell_first);
    s.cell_last = PyMem_RawMalloc(cells * sizeof *s.cell_last);
    s.cell_used = PyMem_RawCalloc(cells, 1);
    s.ran = PyMem_RawCalloc((size_t)(s.n_launches ? s.n_launches : 1), 1);
    s.intervals = PyMem_RawCalloc((size_t)n_planes, sizeof *s.intervals);
    s.n_intervals = PyMem_RawCalloc((size_t)n_planes, sizeof *s.n_intervals);
    s.interval_capacity = PyMem_RawCalloc((size_t)n_planes, sizeof *s.interval_capacity);
    s.run_starts = PyMem_RawCalloc((size_t)n_planes, sizeof *s.run_starts);
    s.n_runs = PyMem_RawCalloc((size_t)n_planes, sizeof *s.n_runs);
    s.runs_capacity = PyMem_RawCalloc((size_t)n_planes, sizeof *s.runs_capacity);
    views = PyMem_Calloc((size_t)(n_lines ? n_lines : 1), sizeof *views);
    stamps_ns = PyMem_Calloc((size_t)(n_lines ? n_lines : 1), sizeof *stamps_ns);
    line_plane = PyMem_Calloc((size_t)(n_lines ? n_lines : 1), sizeof *line_plane);
    line_ids = PyMem_Calloc((size_t)(n_lines ? n_lines : 1), sizeof *line_ids);
    line_have = PyMem_Calloc((size_t)(n_lines ? n_lines : 1), sizeof *line_have);
    if (s.cell_first == NULL || s.cell_last == NULL || s.cell_used == NULL || s.ran == NULL ||
        s.intervals == NULL || s.n_intervals == NULL || s.interval_capacity == NULL ||
        s.run_starts == NULL || s.n_runs == NULL || s.runs_capacity == NULL || views == NULL ||
        stamps_ns == NULL || line_plane == NULL || line_ids == NULL || line_have == NULL)
        goto no_memory;
    for (; held < n_lines; held++) {
        stamps_ns[held] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(stamps, held));
        if (stamps_ns[held] == -1 && PyErr_Occurred()) goto done;
        line_plane[held] = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(planes, held));
        if (line_plane[held] == -1 && PyErr_Occurred()) goto done;
        if (line_plane[held] < 0 || line_plane[held] >= n_planes) {
            PyErr_SetString(PyExc_ValueError, "a line's plane is out of range");
            goto done;
        }
        PyObject *ids = PySequence_Fast(PySequence_Fast_GET_ITEM(ids_seq, held),
                                        "kernel_sums expects stat ids per line");
        if (ids == NULL) goto done;
        if (PySequence_Fast_GET_SIZE(ids) != KS_STATS) {
            Py_DECREF(ids);
            PyErr_SetString(PyExc_ValueError, "six stat ids per line");
            goto done;
        }
        int read = stat_ids_of(ids, KS_STATS, line_ids[held], line_have[held]);
        Py_DECREF(ids);
        if (read < 0) goto done;
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(lines, held), &views[held],
                               PyBUF_SIMPLE) < 0)
            goto done;
    }
    int status = 0;
    s.thread = PyEval_SaveThread();
    for (Py_ssize_t i = 0; i < n_lines && status == 0; i++) {
        const uint8_t *start = views[i].buf;
        status = sum_kernel_line(&s, start, start + views[i].len, stamps_ns[i], line_plane[i],
                                 line_ids[i], line_have[i]);
    }
    for (Py_ssize_t p = 0; p < n_planes && status == 0; p++)
        if (busy_time(&s, p) < 0) status = -1;
    PyEval_RestoreThread(s.thread);
    if (status == 2) goto done; /* the callback's error */
    if (status < 0) goto no_memory;
    if (status > 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    /* Per step: its device time over the GPUs, and its launches whose kernel never ran. */
    s.steps.count = s.windows;
    for (Py_ssize_t w = 0; w < s.windows; w++) {
        int64_t total = 0;
        for (Py_ssize_t p = 0; p < n_planes; p++) {
            Py_ssize_t at = w * n_planes + p;
            if (!s.cell_used[at]) continue;
            int64_t first = s.cell_first[at] < s.win_begin[w] ? s.cell_first[at] : s.win_begin[w];
            int64_t last = s.cell_last[at] > s.win_end[w] ? s.cell_last[at] : s.win_end[w];
            total = (int64_t)((uint64_t)total + (uint64_t)(last - first));
        }
        CELL(&s.steps, ST_TOTAL, int64_t, w) = total;
        CELL(&s.steps, ST_MISSING, int64_t, w) = 0;
    }
    for (Py_ssize_t slot = 0; slot < s.n_launches && s.windows > 0; slot++) {
        if (s.ran[slot]) continue;
        int64_t launch = s.launch_ps[slot];
        Py_ssize_t after = upper_bound_i64(s.win_begin, s.windows, launch, s.window_hint);
        s.window_hint = after;
        if (after > 0 && launch < s.win_end[after - 1])
            CELL(&s.steps, ST_MISSING, int64_t, after - 1) += 1;
    }
    columns = Py_BuildValue("[LLL]", (long long)s.events, (long long)s.unclaimed,
                            (long long)(int64_t)s.unclaimed_ps);
    if (columns == NULL || rows_take_all(&s.ops, columns) < 0 ||
        rows_take_all(&s.cells, columns) < 0 || rows_take_all(&s.unattributed, columns) < 0 ||
        rows_take_all(&s.planes, columns) < 0 || rows_take_all(&s.steps, columns) < 0)
        goto done;
    result = PyList_AsTuple(columns);
    goto done;
no_memory:
    PyErr_NoMemory();
done:
    for (Py_ssize_t i = 0; i < held; i++) PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    PyMem_Free(stamps_ns);
    PyMem_Free(line_plane);
    PyMem_Free(line_ids);
    PyMem_Free(line_have);
    Py_XDECREF(columns);
    rows_clear(&s.ops);
    rows_clear(&s.cells);
    rows_clear(&s.unattributed);
    rows_clear(&s.planes);
    rows_clear(&s.steps);
    map_free(&s.cell_of);
    PyMem_RawFree(s.grid);
    map_free(&s.unlaunched);
    PyMem_RawFree(s.combos.slots);
    PyMem_RawFree(s.op_row);
    PyMem_RawFree(s.op_latest_step);
    PyMem_RawFree(s.op_latest_cell);
    PyMem_RawFree(s.kernel_row);
    PyMem_RawFree(s.cell_first);
    PyMem_RawFree(s.cell_last);
    PyMem_RawFree(s.cell_used);
    PyMem_RawFree(s.ran);
    for (Py_ssize_t p = 0; s.intervals != NULL && p < n_planes; p++) PyMem_RawFree(s.intervals[p]);
    for (Py_ssize_t p = 0; s.run_starts != NULL && p < n_planes; p++) PyMem_RawFree(s.run_starts[p]);
    PyMem_RawFree(s.intervals);
    PyMem_RawFree(s.n_intervals);
    PyMem_RawFree(s.interval_capacity);
    PyMem_RawFree(s.run_starts);
    PyMem_RawFree(s.n_runs);
    PyMem_RawFree(s.runs_capacity);
    if (li.obj != NULL) PyBuffer_Release(&li);
    if (lp.obj != NULL) PyBuffer_Release(&lp);
    if (wb.obj != NULL) PyBuffer_Release(&wb);
    if (we.obj != NULL) PyBuffer_Release(&we);
    Py_XDECREF(lines);
    Py_XDECREF(stamps);
    Py_XDECREF(planes);
    Py_XDECREF(ids_seq);
    return result;
}

/* A compiled pass's status as what its Python call returns: 1 where the call ends here
 * (status -1: out of memory, the error set; 1: the array path's, None in *result); 0 where
 * the columns follow. */
static int pass_ended(int status, PyObject **result) {
    if (status < 0) {
        PyErr_NoMemory();
        return 1;
    }
    if (status > 0) {
        *result = Py_NewRef(Py_None);
        return 1;
    }
    return 0;
}

/* The host's step markers and kernel launches (platforms/host_steps.host_markers). */
enum { HS_ROOT, HS_STEP_NUM, HS_CORRELATION };

/* A numeric stat as EventTable.numbers gives it: NaN where absent, inf absent too. */
static double host_number(const KernelEvent *k, int j) {
    double value;
    if (k->kind[j] == KIND_DOUBLE) value = k->number[j];
    else if (k->kind[j] == KIND_INT) value = (double)k->bits[j];
    else return Py_NAN;
    if (isinf(value)) return Py_NAN;
    if (value > MAX_MAGNITUDE) return MAX_MAGNITUDE;
    if (value < -MAX_MAGNITUDE) return -MAX_MAGNITUDE;
    return value;
}

/* The roots and launches of one serialized XLine appended. 0; 1: the array path must read
 * the lines (malformed, out of range, a stat twice in an event); -1: out of memory. */
static int host_line(Rows *roots, Rows *launches, const uint8_t *p, const uint8_t *end,
                     int64_t timestamp_ns, const int64_t *ids, const int *have) {
    Parser ps = {p, NULL, NULL, 0};
    KernelEvent k;
    int8_t table[STAT_SLOTS];
    const int8_t *slot_of = stat_slots(table, ids, have, 3) ? table : NULL;
    if (timestamp_ns > MAX_TIME_PS / 1000 || timestamp_ns < -(MAX_TIME_PS / 1000)) return 1;
    int64_t base_ps = timestamp_ns * 1000;
    const uint8_t *event;
    int found = 0;
    while ((found = next_event(&ps, &p, end, &event)) > 0) {
        if (scan_kernel(&ps, event, p, ids, have, 3, slot_of, &k) < 0) return 1;
        for (int j = 0; j < 3; j++)
            if (k.count[j] > 1) return 1;
        if (k.offset > MAX_TIME_PS || k.offset < -MAX_TIME_PS) return 1;
        if (k.duration < 0 || k.duration > MAX_TIME_PS) return 1;
        int64_t begin = k.offset + base_ps, stop;
        if (__builtin_add_overflow(begin, k.duration, &stop)) return 1;
        double step_num = host_number(&k, HS_STEP_NUM);
        if (k.kind[HS_ROOT] == KIND_INT || !isnan(step_num)) {
            if (rows_reserve(roots) < 0) return -1;
            Py_ssize_t row = roots->count++;
            CELL(roots, 0, double, row) = step_num;
            CELL(roots, 1, int64_t, row) = begin;
            CELL(roots, 2, int64_t, row) = stop;
        }
        if (k.kind[HS_CORRELATION] == KIND_INT) {
            if (rows_reserve(launches) < 0) return -1;
            Py_ssize_t row = launches->count++;
            CELL(launches, 0, int64_t, row) = k.bits[HS_CORRELATION];
            CELL(launches, 1, int64_t, row) = begin;
        }
    }
    if (found < 0) return 1;
    return 0;
}

PyDoc_STRVAR(host_launches_doc,
"host_launches(lines, timestamps_ns, stat_ids)\n"
"    -> None or (root step_num, root begin_ps, root end_ps, launch id, launch begin_ps)\n\n"
"One pass over the events of serialized host XLines (bytes-like, each with its\n"
"timestamp_ns); stat_ids: the ids of _r, step_num and correlation_id (or None). A root is\n"
"an event with an integer _r or a numeric step_num (float64, NaN where absent; int64 begin\n"
"and end); a launch one with an integer correlation_id (uint64 id, int64 begin), each in\n"
"line and event order. None where the array path must read the lines: malformed, out of\n"
"range, or a stat twice in an event.");

static PyObject *host_launches(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *lines_arg, *stamps_arg, *ids_arg;
    if (!PyArg_ParseTuple(args, "OOO", &lines_arg, &stamps_arg, &ids_arg)) return NULL;
    PyObject *lines = NULL, *stamps = NULL, *ids_seq = NULL, *result = NULL, *columns = NULL;
    HeldLines held = {0};
    int64_t ids[KS_STATS] = {0};
    int have[KS_STATS] = {0};
    Rows roots, launches;
    rows_init(&roots, 3, EIGHT);
    rows_init(&launches, 2, EIGHT);
    lines = PySequence_Fast(lines_arg, "host_launches expects a sequence of lines");
    stamps = PySequence_Fast(stamps_arg, "host_launches expects a sequence of timestamps");
    ids_seq = PySequence_Fast(ids_arg, "host_launches expects a sequence of stat ids");
    if (lines == NULL || stamps == NULL || ids_seq == NULL) goto done;
    Py_ssize_t n_lines = PySequence_Fast_GET_SIZE(lines);
    if (PySequence_Fast_GET_SIZE(stamps) != n_lines || PySequence_Fast_GET_SIZE(ids_seq) != 3) {
        PyErr_SetString(PyExc_ValueError, "a timestamp per line and three stat ids");
        goto done;
    }
    if (stat_ids_of(ids_seq, 3, ids, have) < 0 ||
        held_lines_take(&held, lines, stamps, n_lines) < 0)
        goto done;
    int status = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n_lines && status == 0; i++) {
        const uint8_t *start = held.views[i].buf;
        status = host_line(&roots, &launches, start, start + held.views[i].len,
                           held.stamps_ns[i], ids, have);
    }
    Py_END_ALLOW_THREADS
    if (pass_ended(status, &result)) goto done;
    columns = PyList_New(0);
    if (columns == NULL || rows_take_all(&roots, columns) < 0 ||
        rows_take_all(&launches, columns) < 0)
        goto done;
    result = PyList_AsTuple(columns);
done:
    held_lines_release(&held);
    Py_XDECREF(columns);
    rows_clear(&roots);
    rows_clear(&launches);
    Py_XDECREF(lines);
    Py_XDECREF(stamps);
    Py_XDECREF(ids_seq);
    return result;
}

/* --- XLA:CPU host ops: a host line's op events, flow ends, executions and step roots --- */

/* The stats host_ops reads (platforms/cpu._OP_STATS' order). */
enum { HO_HLO_OP, HO_PROGRAM, HO_ROOT, HO_STEP_NUM, HO_RUN, HO_FLOW, HO_END_FLOW, HO_DEVICE,
       HO_STATS };
/* What an event's metadata id makes it (the flags table's bits). */
enum { HO_IS_END = 1, HO_IS_EXECUTE = 2, HO_IS_SCHEDULE = 4 };
/* The op columns: begin, end, flow (_p), program, run, device, hlo_op ref; has flow, has run. */
static const Py_ssize_t HO_OP_SIZES[] = {8, 8, 8, 8, 8, 8, 8, 1, 1};

typedef struct {
    Rows ops, ends, executes, schedules, roots;
    const uint8_t *flags, *named; /* per event metadata id; per stat metadata id */
    Py_ssize_t n_flags, n_named;
} HostOps;

/* An int stat's bits, 0 where the event has none (EventTable.integers' values). */
static inline int64_t int_bits(const KernelEvent *k, int j) {
    return k->kind[j] == KIND_INT ? k->bits[j] : 0;
}

/* The events of one piece of a serialized XLine, from *at, at most `max_events` of them;
 * *at is moved past them. 0; 1: the array path must read the piece (malformed, out of range,
 * a stat twice in an event, a string-valued hlo_op); -1: out of memory. */
static int host_ops_piece(HostOps *h, const uint8_t **at, const uint8_t *end,
                          Py_ssize_t max_events, int64_t timestamp_ns, const int64_t *ids,
                          const int *have) {
    const uint8_t *p = *at;
    Parser ps = {p, NULL, NULL, 0};
    KernelEvent k;
    int8_t table[STAT_SLOTS];
    const int8_t *slot_of = stat_slots(table, ids, have, HO_STATS) ? table : NULL;
    if (timestamp_ns > MAX_TIME_PS / 1000 || timestamp_ns < -(MAX_TIME_PS / 1000)) return 1;
    int64_t base_ps = timestamp_ns * 1000;
    Py_ssize_t events = 0;
    const uint8_t *event;
    int found = 0;
    while ((max_events < 0 || events < max_events) &&
           (found = next_event(&ps, &p, end, &event)) > 0) {
        if (scan_kernel(&ps, event, p, ids, have, HO_STATS, slot_of, &k) < 0) return 1;
        events++;
        for (int j = 0; j < HO_STATS; j++)
            if (k.count[j] > 1) return 1;
        if (k.kind[HO_HLO_OP] == KIND_STR) return 1; /* named by its text: the array path */
        if (k.offset > MAX_TIME_PS || k.offset < -MAX_TIME_PS) return 1;
        if (k.duration < 0 || k.duration > MAX_TIME_PS) return 1;
        int64_t begin = k.offset + base_ps, stop;
        if (__builtin_add_overflow(begin, k.duration, &stop)) return 1;
        int flags = k.metadata_id >= 0 && k.metadata_id < h->n_flags ? h->flags[k.metadata_id] : 0;
        double step_num = host_number(&k, HO_STEP_NUM);
        if (k.kind[HO_ROOT] == KIND_INT || !isnan(step_num)) {
            if (rows_reserve(&h->roots) < 0) return -1;
            Py_ssize_t row = h->roots.count++;
            CELL(&h->roots, 0, double, row) = step_num;
            CELL(&h->roots, 1, int64_t, row) = begin;
            CELL(&h->roots, 2, int64_t, row) = stop;
        }
        if ((flags & HO_IS_END) && k.kind[HO_END_FLOW] == KIND_INT) {
            if (rows_reserve(&h->ends) < 0) return -1;
            Py_ssize_t row = h->ends.count++;
            CELL(&h->ends, 0, int64_t, row) = k.bits[HO_END_FLOW];
            CELL(&h->ends, 1, int64_t, row) = stop;
        }
        if (flags & HO_IS_EXECUTE) {
            if (rows_reserve(&h->executes) < 0) return -1;
            Py_ssize_t row = h->executes.count++;
            CELL(&h->executes, 0, int64_t, row) = begin;
            CELL(&h->executes, 1, int64_t, row) = stop;
        }
        if (flags & HO_IS_SCHEDULE) {
            if (rows_reserve(&h->schedules) < 0) return -1;
            CELL(&h->schedules, 0, int64_t, h->schedules.count++) = begin;
        }
        int64_t hlo = k.bits[HO_HLO_OP];
        if (k.kind[HO_PROGRAM] != KIND_INT || k.kind[HO_HLO_OP] != KIND_REF || hlo < 0 ||
            hlo >= h->n_named || !h->named[hlo])
            continue; /* not an XLA op: no program, or an hlo_op without a name */
        if (rows_reserve(&h->ops) < 0) return -1;
        Py_ssize_t row = h->ops.count++;
        CELL(&h->ops, 0, int64_t, row) = begin;
        CELL(&h->ops, 1, int64_t, row) = stop;
        CELL(&h->ops, 2, int64_t, row) = int_bits(&k, HO_FLOW);
        CELL(&h->ops, 3, int64_t, row) = k.bits[HO_PROGRAM];
        CELL(&h->ops, 4, int64_t, row) = int_bits(&k, HO_RUN);
        CELL(&h->ops, 5, int64_t, row) = int_bits(&k, HO_DEVICE);
        CELL(&h->ops, 6, int64_t, row) = hlo;
        CELL(&h->ops, 7, uint8_t, row) = k.kind[HO_FLOW] == KIND_INT;
        CELL(&h->ops, 8, uint8_t, row) = k.kind[HO_RUN] == KIND_INT;
    }
    if (found < 0) return 1;
    *at = p;
    return 0;
}

PyDoc_STRVAR(host_ops_doc,
"host_ops(line, timestamp_ns, start, max_events, stat_ids, flags, named)\n"
"    -> None or (next, op begin_ps, end_ps, flow, program, run, device, hlo_op ref,\n"
"                has_flow, has_run, end flow id, end end_ps, execute begin_ps, end_ps,\n"
"                schedule begin_ps, root step_num, begin_ps, end_ps)\n\n"
"One pass over a piece of a serialized XLine of an XLA:CPU host plane: from byte `start`,\n"
"at most `max_events` events (-1: all); `next` is the byte offset to go on from.\n"
"stat_ids: the ids (or None) of hlo_op, program_id, _r, step_num, run_id, _p, _c and\n"
"device_ordinal. flags (bytes, indexed by event metadata id; ids past it 0): bit 1 an\n"
"`end:` event, 2 an execution, 4 a schedule. named (bytes, indexed by stat metadata id):\n"
"1 where the id names a non-empty string. An op is an event with an int program_id and an\n"
"hlo_op ref that is named (int64 columns; the int stats' bits, 0 where absent; bool\n"
"has_flow, has_run); an end an `end:` event with an int _c; a root an event with an int _r\n"
"or a numeric step_num (float64, NaN where absent); each in event order. None where the\n"
"array path must read the piece: malformed, out of range, a stat twice in an event, or a\n"
"string-valued hlo_op.");

static PyObject *host_ops(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *line, *ids_arg, *flags_arg, *named_arg;
    long long timestamp_ns;
    Py_ssize_t start, max_events;
    if (!PyArg_ParseTuple(args, "OLnnOOO", &line, &timestamp_ns, &start, &max_events, &ids_arg,
                          &flags_arg, &named_arg))
        return NULL;
    Py_buffer view = {0}, flags = {0}, named = {0};
    PyObject *ids_seq = NULL, *columns = NULL, *next = NULL, *result = NULL;
    int64_t ids[HO_STATS] = {0};
    int have[HO_STATS] = {0};
    HostOps h;
    rows_init(&h.ops, 9, HO_OP_SIZES);
    rows_init(&h.ends, 2, EIGHT);
    rows_init(&h.executes, 2, EIGHT);
    rows_init(&h.schedules, 1, EIGHT);
    rows_init(&h.roots, 3, EIGHT);
    if (PyObject_GetBuffer(line, &view, PyBUF_SIMPLE) < 0 ||
        PyObject_GetBuffer(flags_arg, &flags, PyBUF_SIMPLE) < 0 ||
        PyObject_GetBuffer(named_arg, &named, PyBUF_SIMPLE) < 0)
        goto done;
    ids_seq = PySequence_Fast(ids_arg, "host_ops expects a sequence of stat ids");
    if (ids_seq == NULL) goto done;
    if (PySequence_Fast_GET_SIZE(ids_seq) != HO_STATS) {
        PyErr_SetString(PyExc_ValueError, "host_ops expects eight stat ids");
        goto done;
    }
    if (start < 0 || start > view.len) {
        PyErr_SetString(PyExc_ValueError, "start is outside the line");
        goto done;
    }
    if (stat_ids_of(ids_seq, HO_STATS, ids, have) < 0) goto done;
    h.flags = flags.buf;
    h.n_flags = flags.len;
    h.named = named.buf;
    h.n_named = named.len;
    const uint8_t *p = (const uint8_t *)view.buf + start;
    const uint8_t *end = (const uint8_t *)view.buf + view.len;
    /* Room for about the ops the piece holds (an op event is tens of bytes). */
    Py_ssize_t expected = (end - p) / 48 + 16;
    if (max_events >= 0 && expected > max_events) expected = max_events + 1;
    int status = rows_resize(&h.ops, expected) < 0 ? -1 : 0;
    if (status == 0) {
        Py_BEGIN_ALLOW_THREADS
        status = host_ops_piece(&h, &p, end, max_events, timestamp_ns, ids, have);
        Py_END_ALLOW_THREADS
    }
    if (pass_ended(status, &result)) goto done;
    next = PyLong_FromSsize_t(p - (const uint8_t *)view.buf);
    columns = PyList_New(0);
    if (next == NULL || columns == NULL || PyList_Append(columns, next) < 0 ||
        rows_take_all(&h.ops, columns) < 0 || rows_take_all(&h.ends, columns) < 0 ||
        rows_take_all(&h.executes, columns) < 0 || rows_take_all(&h.schedules, columns) < 0 ||
        rows_take_all(&h.roots, columns) < 0)
        goto done;
    result = PyList_AsTuple(columns);
done:
    Py_XDECREF(next);
    Py_XDECREF(columns);
    rows_clear(&h.ops);
    rows_clear(&h.ends);
    rows_clear(&h.executes);
    rows_clear(&h.schedules);
    rows_clear(&h.roots);
    Py_XDECREF(ids_seq);
    if (view.obj != NULL) PyBuffer_Release(&view);
    if (flags.obj != NULL) PyBuffer_Release(&flags);
    if (named.obj != NULL) PyBuffer_Release(&named);
    return result;
}

static PyMethodDef methods[] = {
    {"host_ops", host_ops, METH_VARARGS, host_ops_doc},
    {"span_sums", span_sums, METH_VARARGS, span_sums_doc},
    {"host_integers", host_integers, METH_VARARGS, host_integers_doc},
    {"kernel_sums", kernel_sums, METH_VARARGS, kernel_sums_doc},
    {"host_launches", host_launches, METH_VARARGS, host_launches_doc},
    {"decode_events", decode_events, METH_O, decode_events_doc},
    {"decode_line", decode_line, METH_VARARGS, decode_line_doc},
    {"split_message", split_message, METH_VARARGS, split_message_doc},
    {"line_has_stats", line_has_stats, METH_VARARGS, line_has_stats_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_wire",
    "Compiled decoder of serialized XEvent messages (see event_table.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__wire(void) {
    if (PyType_Ready(&BufferType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    WireError = PyErr_NewException("tb_roofline_plugin._wire.WireError", PyExc_ValueError, NULL);
    if (WireError == NULL || PyModule_AddObject(m, "WireError", WireError) < 0) {
        Py_XDECREF(WireError);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(WireError); /* PyModule_AddObject stole one reference; keep ours */
    return m;
}
