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
#include <string.h>

/* Same as upb's default: a message's nesting depth, groups and sub-messages counted. */
#define DEPTH_LIMIT 100

enum { KIND_NONE = 0, KIND_INT = 1, KIND_DOUBLE = 2, KIND_REF = 3, KIND_STR = 4, KIND_BYTES = 5 };
enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2, WIRE_START_GROUP = 3,
       WIRE_END_GROUP = 4, WIRE_FIXED32 = 5 };

static PyObject *WireError;

/* --- output columns ------------------------------------------------------------------ */

/* Growable columns that share one row count: the stats of a line (one row per XStat) or
 * where its str/bytes values lie. Each column is a bytearray, grown in place and handed to
 * Python as it is (numpy wraps it without a copy). */
#define MAX_COLUMNS 5

typedef struct {
    Py_ssize_t count, capacity; /* rows used, rows allocated */
    int n_columns;
    Py_ssize_t item_size[MAX_COLUMNS];
    PyObject *array[MAX_COLUMNS];
    char *data[MAX_COLUMNS]; /* each array's buffer; it moves when the array grows */
} Rows;

#define CELL(rows, column, type, row) (((type *)(rows)->data[column])[row])
enum { STAT_EVENT, STAT_ID, STAT_KIND, STAT_BITS, STAT_NUMBER };
enum { OBJ_EVENT, OBJ_START, OBJ_LENGTH };
static const Py_ssize_t STAT_SIZES[] = {8, 8, 1, 8, 8};
static const Py_ssize_t OBJ_SIZES[] = {8, 8, 8};

static int rows_init(Rows *r, int n_columns, const Py_ssize_t *item_size) {
    memset(r, 0, sizeof *r);
    r->n_columns = n_columns;
    for (int c = 0; c < n_columns; c++) {
        r->item_size[c] = item_size[c];
        r->array[c] = PyByteArray_FromStringAndSize(NULL, 0);
        if (r->array[c] == NULL) return -1;
        r->data[c] = PyByteArray_AS_STRING(r->array[c]);
    }
    return 0;
}

/* Resizes every column to `capacity` rows; -1 with a Python error set when that fails. */
static int rows_resize(Rows *r, Py_ssize_t capacity) {
    for (int c = 0; c < r->n_columns; c++) {
        if (PyByteArray_Resize(r->array[c], capacity * r->item_size[c]) < 0) return -1;
        r->data[c] = PyByteArray_AS_STRING(r->array[c]);
    }
    r->capacity = capacity;
    return 0;
}

/* Makes room for one more row (capacity doubles, so appending costs O(1) per row). */
static inline int rows_reserve(Rows *r) {
    if (r->count < r->capacity) return 0;
    if (r->capacity > PY_SSIZE_T_MAX / 16) {
        PyErr_NoMemory();
        return -1;
    }
    return rows_resize(r, r->capacity ? r->capacity * 2 : 1024);
}

static void rows_clear(Rows *r) {
    for (int c = 0; c < r->n_columns; c++) Py_CLEAR(r->array[c]);
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

/* Decodes one XStat (the bytes [p, end)) of event `event` and appends it to the columns. */
static int parse_stat(Parser *ps, const uint8_t *p, const uint8_t *end, int64_t event,
                      Rows *stats, Rows *objects) {
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
    if (ps->wanted != NULL) { /* a stat nobody asked for: checked, not kept */
        Py_ssize_t w = 0;
        while (w < ps->n_wanted && ps->wanted[w] != id) w++;
        if (w == ps->n_wanted) return 0;
    }
    if (kind == KIND_STR || kind == KIND_BYTES) {
        /* stat_int of a string is its index among the line's strings. */
        if (rows_reserve(objects) < 0) return -2;
        Py_ssize_t k = objects->count++;
        CELL(objects, OBJ_EVENT, int64_t, k) = event;
        CELL(objects, OBJ_START, int64_t, k) = (int64_t)(object - ps->start);
        CELL(objects, OBJ_LENGTH, int64_t, k) = (int64_t)object_length;
        bits = (int64_t)k;
    }
    if (rows_reserve(stats) < 0) return -2;
    Py_ssize_t row = stats->count++;
    CELL(stats, STAT_EVENT, int64_t, row) = event;
    CELL(stats, STAT_ID, int64_t, row) = id;
    CELL(stats, STAT_KIND, int8_t, row) = kind;
    CELL(stats, STAT_BITS, int64_t, row) = bits;
    CELL(stats, STAT_NUMBER, double, row) = number;
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
"Decodes a list of serialized XEvent messages (bytes-like). Returns bytearrays:\n"
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
    PyObject *result = NULL, *event_columns = NULL;
    Rows stats = {0}, objects = {0}; /* zeroed: `done` may clear them before init */
    if (rows_init(&stats, 5, STAT_SIZES) < 0 || rows_init(&objects, 3, OBJ_SIZES) < 0) goto done;

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
        Parser ps = {data, NULL};
        int64_t fields[4];
        int status = parse_event(&ps, data, data + size, (int64_t)i, fields, &stats, &objects);
        for (int k = 0; k < 4; k++) out[k * n + i] = fields[k];
        if (have_view) PyBuffer_Release(&view);
        if (status == -1) {
            PyErr_Format(WireError, "event %zd is corrupt (%s)", i, ps.error);
            goto done;
        }
        if (status < 0) goto done;
    }

    /* Columns cut to their rows; the tuple takes over every reference. */
    if (rows_resize(&stats, stats.count) < 0 || rows_resize(&objects, objects.count) < 0)
        goto done;
    result = PyTuple_Pack(9, event_columns, stats.array[STAT_EVENT], stats.array[STAT_ID],
                          stats.array[STAT_KIND], stats.array[STAT_BITS],
                          stats.array[STAT_NUMBER], objects.array[OBJ_EVENT],
                          objects.array[OBJ_START], objects.array[OBJ_LENGTH]);

done:
    rows_clear(&stats);
    rows_clear(&objects);
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
"columns are as in decode_events, the event columns one bytearray each, and obj_start\n"
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
    PyObject *result = NULL, *next = NULL;
    Rows events = {0}, stats = {0}, objects = {0};
    if (rows_init(&events, 4, EVENT_SIZES) < 0 || rows_init(&stats, 5, STAT_SIZES) < 0 ||
        rows_init(&objects, 3, OBJ_SIZES) < 0)
        goto done;
    if (start < 0 || start > view.len) {
        PyErr_SetString(PyExc_ValueError, "start is outside the line");
        goto done;
    }
    const uint8_t *p = (const uint8_t *)view.buf + start;
    const uint8_t *end = (const uint8_t *)view.buf + view.len;
    Parser ps = {view.buf, NULL, wanted.buf, wanted.buf != NULL ? wanted.len / 8 : 0};
    int64_t fields[4];
    while (p < end && (max_events < 0 || events.count < max_events)) {
        uint32_t field;
        int wire;
        uint64_t length;
        if (read_tag(&ps, &p, end, &field, &wire) < 0) goto malformed;
        if (!(field == 4 && wire == WIRE_LEN)) { /* header fields: read by protobuf */
            if (skip_field(&ps, &p, end, field, wire, DEPTH_LIMIT) < 0) goto malformed;
            continue;
        }
        if (read_length(&ps, &p, end, &length) < 0) goto malformed;
        if (rows_reserve(&events) < 0) goto done;
        Py_ssize_t row = events.count;
        int status = parse_event(&ps, p, p + length, row, fields, &stats, &objects);
        if (status == -1) goto malformed;
        if (status < 0) goto done;
        for (int k = 0; k < 4; k++) CELL(&events, k, int64_t, row) = fields[k];
        events.count++;
        p += length;
    }
    if (rows_resize(&events, events.count) < 0 || rows_resize(&stats, stats.count) < 0 ||
        rows_resize(&objects, objects.count) < 0)
        goto done;
    next = PyLong_FromSsize_t(p - (const uint8_t *)view.buf);
    if (next == NULL) goto done;
    result = PyTuple_Pack(13, events.array[EVENT_METADATA], events.array[EVENT_OFFSET],
                          events.array[EVENT_DURATION], events.array[EVENT_OCCURRENCES],
                          stats.array[STAT_EVENT], stats.array[STAT_ID], stats.array[STAT_KIND],
                          stats.array[STAT_BITS], stats.array[STAT_NUMBER],
                          objects.array[OBJ_EVENT], objects.array[OBJ_START],
                          objects.array[OBJ_LENGTH], next);
    goto done;
malformed:
    PyErr_Format(WireError, "event %zd is corrupt (%s)", events.count, ps.error);
done:
    Py_XDECREF(next);
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

static PyMethodDef methods[] = {
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
