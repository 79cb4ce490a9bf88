/* recallbench.measures._ctrec: plain TREC files, read and evaluated as trec_eval does.
 *
 * The qrels are read whole; a run too, or streamed when large and grouped by query (see
 * Stream). Read whole, lines are split in place (each field NUL-ended), query ids
 * numbered through one hash table, rows grouped by query, and each query's judgments
 * indexed on their own while that query is evaluated. Anything not plain returns 0: the
 * Python engine reads it (see _ctrec.c). */
#include "_ctrec.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

/* 0 other, 1 C isspace but newline, 2 newline, 3 not plain */
static unsigned char byte_class[256];

void ctrec_init_classes(void)
{
    int c;
    for (c = 0; c < 256; c++)
        byte_class[c] = 0;  /* bytes above ASCII: checked as UTF-8 (valid_utf8) */
    byte_class[' '] = byte_class['\t'] = byte_class['\v'] = byte_class['\f'] = 1;
    byte_class['\r'] = 1;
    byte_class['\n'] = 2;
    byte_class[0] = byte_class[0x1c] = byte_class[0x1d] = byte_class[0x1e] = 3;
    byte_class[0x1f] = 3;
}

/* The file's bytes ``offset`` .. ``offset + length`` (``length`` 0: the whole file). */
static char *read_range(const char *path, size_t offset, size_t length, size_t *size)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    char *buf;
    size_t got = 0;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        offset + length > (size_t) st.st_size || offset >= (size_t) st.st_size) {
        close(fd);
        return NULL;
    }
    if (!length)
        length = (size_t) st.st_size - offset;
    buf = malloc(length + 1);
    if (!buf) {
        close(fd);
        return NULL;
    }
    while (got < length) {
        ssize_t r = pread(fd, buf + got, length - got, (off_t) (offset + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t) r;
    }
    close(fd);
    if (got != length) {
        free(buf);
        return NULL;
    }
    /* the last line ends too (with no blank line after it: a qrels file refuses those) */
    if (buf[got - 1] != '\n')
        buf[got++] = '\n';
    *size = got;
    return buf;
}

static char *read_whole(const char *path, size_t *size)
{
    return read_range(path, 0, 0, size);
}

static size_t count_lines(const char *buf, size_t size)
{
    size_t lines = 0;
    const char *end = buf + size, *at = buf;
    while ((at = memchr(at, '\n', (size_t) (end - at))) != NULL) {
        lines++;
        at++;
    }
    return lines;
}

/* Whether ``buf`` is well-formed UTF-8 as Python's strict decoder reads it (Unicode
 * Table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF); the line reader
 * refuses ids that are not, with their line. */
static int valid_utf8(const unsigned char *buf, size_t size)
{
    size_t i = 0;
    while (i < size) {
        unsigned char c = buf[i];
        size_t need, k;
        unsigned char low = 0x80, high = 0xBF;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            need = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0)
                low = 0xA0;
            else if (c == 0xED)
                high = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0)
                low = 0x90;
            else if (c == 0xF4)
                high = 0x8F;
        } else
            return 0;
        if (i + need >= size)
            return 0;
        for (k = 1; k <= need; k++) {
            unsigned char b = buf[i + k];
            if (k == 1 ? (b < low || b > high) : (b < 0x80 || b > 0xBF))
                return 0;
        }
        i += need + 1;
    }
    return 1;
}

/* Whether the file's bytes are ASCII or UTF-8: ASCII skipped 8 bytes at a time. */
static int readable_text(const char *buf, size_t size)
{
    size_t i = 0;
    while (i + 8 <= size) {
        uint64_t w;
        memcpy(&w, buf + i, 8);
        if (w & 0x8080808080808080ULL)
            return valid_utf8((const unsigned char *) buf + i, size - i);
        i += 8;
    }
    return valid_utf8((const unsigned char *) buf + i, size - i);
}

/* Split ``buf`` into lines, NUL-ending every field in place, and call ``take`` with each
 * data line's fields: 4 for qrels, the first 6 of a run line. Comments are skipped as the
 * line reader skips them (qrels: '#' in the first column; run: '#' after leading blanks),
 * and a run's blank lines. -1 when not plain (a line with other fields, a byte the reader
 * refuses or reads differently, and in qrels a blank line, a comment right after another
 * or a comment as the last line: the line reader refuses those, as trec_eval does). */
typedef int (*LineTaker)(void *state, char **fields, size_t *lengths);

static int split_lines(char *buf, size_t size, int qrels, LineTaker take, void *state)
{
    const int want = qrels ? 4 : 6;
    char *fields[6];
    size_t lengths[6];
    size_t i = 0;
    int after_comment = 0;
    while (i < size) {
        int count = 0;
        if (qrels && buf[i] == '#') {
            if (after_comment)
                return -1;
            after_comment = 1;
            goto comment;  /* qrels: '#' in the very first column */
        }
        after_comment = 0;
        for (;;) {
            size_t start;
            while (byte_class[(unsigned char) buf[i]] == 1)
                i++;
            if (byte_class[(unsigned char) buf[i]] == 3)
                return -1;
            if (byte_class[(unsigned char) buf[i]] == 2) {
                i++;
                break;
            }
            start = i;
            while (byte_class[(unsigned char) buf[i]] == 0)
                i++;
            if (count == 0 && !qrels && buf[start] == '#') {
                i = start;
                goto comment;  /* run: '#' after leading blanks */
            }
            if (count < want) {
                fields[count] = buf + start;
                lengths[count] = i - start;
            } else if (qrels) {
                return -1;  /* more than 4 fields: the line reader refuses it */
            }  /* run fields after the tag are ignored, as trec_eval and the reader do */
            count++;
            if (byte_class[(unsigned char) buf[i]] == 3)
                return -1;
            if (byte_class[(unsigned char) buf[i]] == 2) {
                buf[i++] = '\0';
                break;
            }
            buf[i++] = '\0';
        }
        if (qrels && !count)
            return -1;
        if (count && (count < want || take(state, fields, lengths) < 0))
            return -1;
        continue;
    comment: {  /* skipped whole, as the line reader skips it; a NUL is refused there */
            const char *end = memchr(buf + i, '\n', size - i);
            size_t stop = (size_t) (end - buf);  /* the buffer ends with a newline */
            if (memchr(buf + i, '\0', stop - i))
                return -1;
            i = stop + 1;
        }
    }
    return qrels && after_comment ? -1 : 0;
}

static uint64_t mix64(uint64_t h)
{
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 29;
    return h;
}

/* 8 bytes at a time (ids are short: a byte-wise hash measured a tenth of an evaluation) */
static uint64_t hash_bytes(const char *s, size_t n, uint64_t seed)
{
    uint64_t h = seed ^ (0x9e3779b97f4a7c15ULL * (n + 1));
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = mix64(h ^ w) * 0x94d049bb133111ebULL;
        s += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, s, n);
        h = mix64(h ^ w) * 0x94d049bb133111ebULL;
    }
    return mix64(h);
}

static size_t table_size(size_t n)
{
    size_t size = 16;
    while (size < 2 * n + 2)
        size *= 2;
    return size;
}

/* Query ids: open addressing, index + 1 in ``slots`` (0 empty). */
typedef struct {
    size_t *slots;
    size_t mask;
    const char **names;
    size_t *lengths;
    size_t count, capacity;
} Queries;

static int queries_init(Queries *q)
{
    q->mask = 1023;
    q->slots = calloc(q->mask + 1, sizeof(size_t));
    q->capacity = 256;
    q->count = 0;
    q->names = malloc(q->capacity * sizeof(char *));
    q->lengths = malloc(q->capacity * sizeof(size_t));
    return q->slots && q->names && q->lengths ? 0 : -1;
}

static void queries_free(Queries *q)
{
    free(q->slots);
    free(q->names);
    free(q->lengths);
}

static long queries_find(Queries *q, const char *name, size_t len, int insert)
{
    uint64_t h = hash_bytes(name, len, 0);
    size_t at = (size_t) h & q->mask;
    while (q->slots[at]) {
        size_t index = q->slots[at] - 1;
        if (q->lengths[index] == len && memcmp(q->names[index], name, len) == 0)
            return (long) index;
        at = (at + 1) & q->mask;
    }
    if (!insert)
        return -1;
    if (q->count == q->capacity) {
        size_t capacity = q->capacity * 2;
        const char **names = realloc(q->names, capacity * sizeof(char *));
        size_t *lengths;
        if (!names)
            return -2;
        q->names = names;
        lengths = realloc(q->lengths, capacity * sizeof(size_t));
        if (!lengths)
            return -2;
        q->lengths = lengths;
        q->capacity = capacity;
    }
    q->names[q->count] = name;
    q->lengths[q->count] = len;
    q->slots[at] = ++q->count;
    if (2 * q->count > q->mask) {  /* grow and rehash */
        size_t mask = q->mask * 2 + 1, i;
        size_t *slots = calloc(mask + 1, sizeof(size_t));
        if (!slots)
            return -2;
        for (i = 0; i < q->count; i++) {
            size_t k = (size_t) hash_bytes(q->names[i], q->lengths[i], 0) & mask;
            while (slots[k])
                k = (k + 1) & mask;
            slots[k] = i + 1;
        }
        free(q->slots);
        q->slots = slots;
        q->mask = mask;
    }
    return (long) (q->count - 1);
}

/* Rows of a file: query index, id, and a number (score or grade). */
typedef struct {
    Queries *queries;
    uint32_t *query;
    const char **doc;
    uint32_t *len;
    double *score;
    long *grade;
    size_t count, capacity;
    int grades;
    const char *tag;
    const char *last_name;  /* the previous line's query id */
    size_t last_length;
    long last_query;
} Rows;

static int rows_grow(Rows *r, size_t capacity)
{
    void *p;
    if (!(p = realloc(r->query, capacity * sizeof(uint32_t))))
        return -1;
    r->query = p;
    if (!(p = realloc((void *) r->doc, capacity * sizeof(char *))))
        return -1;
    r->doc = p;
    if (!(p = realloc(r->len, capacity * sizeof(uint32_t))))
        return -1;
    r->len = p;
    if (r->grades) {
        if (!(p = realloc(r->grade, capacity * sizeof(long))))
            return -1;
        r->grade = p;
    } else {
        if (!(p = realloc(r->score, capacity * sizeof(double))))
            return -1;
        r->score = p;
    }
    r->capacity = capacity;
    return 0;
}

static void rows_free(Rows *r)
{
    free(r->query);
    free((void *) r->doc);
    free(r->len);
    free(r->score);
    free(r->grade);
}

static const double powers_of_ten[] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
};

/* Scores as the line reader takes them, ``[+-]?([0-9]+.?[0-9]*|.[0-9]+)([eE][+-]?[0-9]+)?``
 * and finite, read to the same double as Python's float and Arrow's reader (both
 * correctly rounded): up to 15 digits without an exponent an exact integer over an exact
 * power of ten, one IEEE division (Clinger's fast path); anything longer through strtod. */
static int read_score(const char *s, size_t n, double *out)
{
    size_t i = 0, digits = 0, dots = 0, after = 0;
    int negative = 0;
    uint64_t mantissa = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        negative = s[i++] == '-';
    for (; i < n; i++) {
        if (s[i] >= '0' && s[i] <= '9') {
            mantissa = mantissa * 10 + (uint64_t) (s[i] - '0');
            digits++;
            after += dots;
        } else if (s[i] == '.' && !dots) {
            dots++;
        } else {
            break;
        }
    }
    if (!digits)
        return -1;
    if (i < n) {  /* an exponent, or not a score */
        size_t e = i + 1, exponent_digits = 0;
        if (s[i] != 'e' && s[i] != 'E')
            return -1;
        if (e < n && (s[e] == '+' || s[e] == '-'))
            e++;
        for (; e < n; e++, exponent_digits++)
            if (s[e] < '0' || s[e] > '9')
                return -1;
        if (!exponent_digits)
            return -1;
    }
    if (i < n || digits > 15) {
        *out = strtod(s, NULL);  /* the field ends at a NUL or a blank */
        return isfinite(*out) ? 0 : -1;
    }
    *out = (double) mantissa / powers_of_ten[after];
    if (negative)
        *out = -*out;
    return 0;
}

/* [+-]digits, at most 15 of them (atol's value) */
static int read_grade(const char *s, size_t n, long *out)
{
    size_t i = 0, digits = 0;
    int negative = 0;
    long value = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        negative = s[i++] == '-';
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        value = value * 10 + (s[i] - '0');
        if (++digits > 15)
            return -1;
    }
    if (!digits)
        return -1;
    *out = negative ? -value : value;
    return 0;
}

static int take_row(void *state, char **fields, size_t *lengths)
{
    Rows *r = (Rows *) state;
    long q;
    const int doc = 2;  /* the id's field, in qrels and run lines alike */
    if (r->count == r->capacity && rows_grow(r, r->capacity * 2 + 1024) < 0)
        return -1;
    if (lengths[doc] > 0xffffffffu)
        return -1;
    if (r->grades) {
        if (read_grade(fields[3], lengths[3], &r->grade[r->count]) < 0)
            return -1;
    } else {
        if (read_score(fields[4], lengths[4], &r->score[r->count]) < 0)
            return -1;
        r->tag = fields[5];
    }
    if (r->last_name && lengths[0] == r->last_length &&
        memcmp(fields[0], r->last_name, lengths[0]) == 0) {
        q = r->last_query;  /* a query's lines usually come together */
    } else {
        q = queries_find(r->queries, fields[0], lengths[0], 1);
        if (q < 0)
            return -1;
        r->last_name = fields[0];
        r->last_length = lengths[0];
        r->last_query = q;
    }
    r->query[r->count] = (uint32_t) q;
    r->doc[r->count] = fields[doc];
    r->len[r->count] = (uint32_t) lengths[doc];
    r->count++;
    return 0;
}

/* Judgments: (query, id) -> grade, open addressing; each slot holds what a lookup
 * compares, so that a lookup touches one cache line (row arrays measured 3x slower). */
typedef struct {
    uint64_t hash;
    const char *doc;   /* NULL: empty */
    uint32_t len;
    uint32_t query;
    long grade;
} Judgment;

typedef struct {
    Judgment *slots;
    size_t mask;
    uint32_t query;    /* the query being evaluated */
} PairIndex;

static uint64_t pair_hash(uint32_t query, const char *doc, size_t len)
{
    return hash_bytes(doc, len, (uint64_t) (query + 1) * 0x9e3779b97f4a7c15ULL);
}

/* The index of one query's judgments (rows ``order[from..to)``, ``table`` room for
 * table_size(to - from) slots): small enough to stay in cache while the query's returned
 * documents are looked up (one index over all judgments measured 3x slower). -1 when a
 * document is judged twice. */
static int index_judgments(const Rows *j, const size_t *order, size_t from, size_t to,
                           uint32_t query, Judgment *table, PairIndex *ix)
{
    size_t i, size = table_size(to - from);
    ix->mask = size - 1;
    ix->slots = table;
    memset(table, 0, size * sizeof(Judgment));
    for (i = from; i < to; i++) {
        size_t row = order[i];
        uint64_t h = pair_hash(query, j->doc[row], j->len[row]);
        size_t at = (size_t) h & ix->mask;
        Judgment *e;
        while ((e = &ix->slots[at])->doc) {
            if (e->hash == h && e->len == j->len[row] &&
                memcmp(e->doc, j->doc[row], j->len[row]) == 0)
                return -1;
            at = (at + 1) & ix->mask;
        }
        e->hash = h;
        e->doc = j->doc[row];
        e->len = j->len[row];
        e->query = query;
        e->grade = j->grade[row];
    }
    return 0;
}

static long judged_grade(const PairIndex *ix, uint64_t h, uint32_t query, const char *doc,
                         size_t len)
{
    size_t at = (size_t) h & ix->mask;
    const Judgment *e;
    while ((e = &ix->slots[at])->doc) {
        if (e->hash == h && e->query == query && e->len == len && memcmp(e->doc, doc, len) == 0)
            return e->grade < 0 ? RELVALUE_UNJUDGED : e->grade;
        at = (at + 1) & ix->mask;
    }
    return RELVALUE_NONPOOL;
}

static long grade_in_index(const void *context, const Hit *hit)
{
    const PairIndex *ix = (const PairIndex *) context;
    return judged_grade(ix, hit->hash, ix->query, hit->doc, (size_t) hit->len);
}

/* Rows grouped by query: ``opens[q]`` .. ``opens[q + 1]`` index ``order``. */
static int group_rows(const Rows *r, size_t queries, size_t **opens_out, size_t **order_out)
{
    size_t *opens = calloc(queries + 1, sizeof(size_t));
    size_t *order = malloc((r->count ? r->count : 1) * sizeof(size_t));
    size_t *fill, i;
    if (!opens || !order) {
        free(opens);
        free(order);
        return -1;
    }
    for (i = 0; i < r->count; i++)
        opens[r->query[i] + 1]++;
    for (i = 0; i < queries; i++)
        opens[i + 1] += opens[i];
    fill = malloc((queries + 1) * sizeof(size_t));
    if (!fill) {
        free(opens);
        free(order);
        return -1;
    }
    memcpy(fill, opens, (queries + 1) * sizeof(size_t));
    for (i = 0; i < r->count; i++)
        order[fill[r->query[i]]++] = i;
    free(fill);
    *opens_out = opens;
    *order_out = order;
    return 0;
}

/* A query to order by id: no global for the comparator (files are read without the
 * GIL, so two threads may evaluate at once). */
typedef struct {
    const char *name;
    size_t length;
    size_t index;
} NamedQuery;

static int compare_query_names(const void *a, const void *b)
{
    const NamedQuery *x = (const NamedQuery *) a, *y = (const NamedQuery *) b;
    int c = memcmp(x->name, y->name, x->length < y->length ? x->length : y->length);
    return c ? c : (x->length > y->length) - (x->length < y->length);
}

/* ``indexes`` in the byte-wise order of their query ids (trec_eval's order). */
static int order_queries(const Queries *q, size_t *indexes, size_t n)
{
    NamedQuery *named = malloc((n ? n : 1) * sizeof(NamedQuery));
    size_t i;
    if (!named)
        return -1;
    for (i = 0; i < n; i++) {
        named[i].name = q->names[indexes[i]];
        named[i].length = q->lengths[indexes[i]];
        named[i].index = indexes[i];
    }
    qsort(named, n, sizeof(NamedQuery), compare_query_names);
    for (i = 0; i < n; i++)
        indexes[i] = named[i].index;
    free(named);
    return 0;
}

/* Whether a query's returned ids repeat (a table over hashes of this query's rows). */
static int has_repeats(const Hit *hits, size_t n, size_t *table, size_t mask)
{
    size_t i;
    memset(table, 0, (mask + 1) * sizeof(size_t));
    for (i = 0; i < n; i++) {
        size_t at = (size_t) hits[i].hash & mask;
        while (table[at]) {
            const Hit *other = &hits[table[at] - 1];
            if (other->hash == hits[i].hash && other->len == hits[i].len &&
                memcmp(other->doc, hits[i].doc, (size_t) hits[i].len) == 0)
                return 1;
            at = (at + 1) & mask;
        }
        table[at] = i + 1;
    }
    return 0;
}

struct FileWork {
    char *qbuf, *rbuf;
    Queries queries;
    Rows judged, run;
    PairIndex index;
    Judgment *judgments;
    size_t *jopens, *jorder, *ropens, *rorder, *evaluated, *repeat_table;
    long *grades, *rels;
    Hit *hits;
    double *values, *sums;
    Text out;
    FileValues collected;
    /* the streaming path (see evaluate_stream) */
    char *tag;             /* the run's last line's tag, copied out of the reused buffer */
    size_t tag_room;
    char **owned;          /* query ids of the run only, copied out of the buffer */
    size_t owned_count, owned_room;
    unsigned char *ran;    /* per query: its group has been read */
    size_t ran_room;
    size_t *done;          /* evaluated queries, in the order evaluated */
    double *done_values;   /* their values, a row each */
    long *done_num_rel;
    unsigned char *done_missing;
    size_t done_count, done_room;
    long comeback_line;    /* not grouped: the line where a query comes back, */
    char *comeback_query;  /* and its id */
};

FileWork *ctrec_file_work_new(void)
{
    return calloc(1, sizeof(FileWork));
}

void ctrec_file_work_free(FileWork *w)
{
    if (!w)
        return;
    free(w->qbuf);
    free(w->rbuf);
    queries_free(&w->queries);
    rows_free(&w->judged);
    rows_free(&w->run);
    free(w->judgments);
    free(w->jopens);
    free(w->jorder);
    free(w->ropens);
    free(w->rorder);
    free(w->evaluated);
    free(w->repeat_table);
    free(w->grades);
    free(w->rels);
    free(w->hits);
    free(w->values);
    free(w->sums);
    free(w->out.data);
    free((void *) w->collected.names);
    free(w->collected.values);
    free(w->collected.num_rel);
    free(w->collected.missing);
    free(w->tag);
    for (size_t i = 0; i < w->owned_count; i++)
        free(w->owned[i]);
    free(w->owned);
    free(w->ran);
    free(w->done);
    free(w->done_values);
    free(w->done_num_rel);
    free(w->done_missing);
    free(w->comeback_query);
    free(w);
}

const char *ctrec_file_work_text(const FileWork *w, size_t *size)
{
    *size = w->out.size;
    return w->out.data;
}

const FileValues *ctrec_file_work_values(const FileWork *w)
{
    return &w->collected;
}

const char *ctrec_file_work_tag(const FileWork *w)
{
    return w->tag ? w->tag : w->run.tag;
}

const char *ctrec_file_work_comeback(const FileWork *w, long *line)
{
    *line = w->comeback_line;
    return w->comeback_query;
}

/* The evaluation (see ctrec_evaluate_plain_files): text in w->out, values collected. */
static int evaluate_files_here(FileWork *w, const char *qrels_path, const char *run_path,
                               const Families *fs, const Options *o, int per_query,
                               int summary, const char *runid_label, int collect)
{
    FileValues *c = &w->collected;
    size_t qsize, rsize, nq, i, evaluated = 0, max_run = 1, max_judged = 1;
    long complete_num_rel = 0;
    if (queries_init(&w->queries) < 0)
        return -1;
    w->judged.queries = w->run.queries = &w->queries;
    w->judged.grades = 1;
    if (!(w->qbuf = read_whole(qrels_path, &qsize)) || !(w->rbuf = read_whole(run_path, &rsize)))
        return 0;
    if (!readable_text(w->qbuf, qsize) || !readable_text(w->rbuf, rsize))
        return 0;  /* not UTF-8: the line reader says where */
    /* room for a row a line: no copying while the rows grow */
    if (rows_grow(&w->judged, count_lines(w->qbuf, qsize)) < 0 ||
        rows_grow(&w->run, count_lines(w->rbuf, rsize)) < 0)
        return -1;
    if (split_lines(w->qbuf, qsize, 1, take_row, &w->judged) < 0 ||
        split_lines(w->rbuf, rsize, 0, take_row, &w->run) < 0 || !w->judged.count ||
        !w->run.count)
        return 0;
    nq = w->queries.count;
    if (group_rows(&w->judged, nq, &w->jopens, &w->jorder) < 0 ||
        group_rows(&w->run, nq, &w->ropens, &w->rorder) < 0)
        return -1;
    w->evaluated = malloc(nq * sizeof(size_t));
    if (!w->evaluated)
        return -1;
    for (i = 0; i < nq; i++) {
        size_t judged = w->jopens[i + 1] - w->jopens[i], ran = w->ropens[i + 1] - w->ropens[i];
        if (judged && (ran || o->complete))
            w->evaluated[evaluated++] = i;
        if (ran > max_run)
            max_run = ran;
        if (judged > max_judged)
            max_judged = judged;
    }
    if (!evaluated)
        return 0;
    w->judgments = malloc(table_size(max_judged) * sizeof(Judgment));
    if (!w->judgments)
        return -1;
    for (i = 0; i < nq; i++)  /* judged twice where nothing is evaluated: the reader too */
        if (w->jopens[i + 1] > w->jopens[i] && w->ropens[i + 1] == w->ropens[i] &&
            !o->complete &&
            index_judgments(&w->judged, w->jorder, w->jopens[i], w->jopens[i + 1],
                            (uint32_t) i, w->judgments, &w->index) < 0)
            return 0;
    if (order_queries(&w->queries, w->evaluated, evaluated) < 0)
        return -1;
    w->repeat_table = malloc(table_size(max_run) * sizeof(size_t));
    w->grades = malloc(max_judged * sizeof(long));
    w->rels = malloc(max_run * sizeof(long));
    w->hits = malloc(max_run * sizeof(Hit));
    w->values = calloc((size_t) fs->slots + 1, sizeof(double));
    w->sums = calloc((size_t) fs->slots + 1, sizeof(double));
    if (!w->repeat_table || !w->judgments || !w->grades || !w->rels || !w->hits ||
        !w->values || !w->sums)
        return -1;
    if (collect) {
        c->names = malloc(evaluated * sizeof(char *));
        c->values = malloc(evaluated * ((size_t) fs->slots + 1) * sizeof(double));
        c->num_rel = malloc(evaluated * sizeof(long));
        c->missing = malloc(evaluated);
        if (!c->names || !c->values || !c->num_rel || !c->missing)
            return -1;
    }
    for (i = 0; i < evaluated; i++) {
        size_t q = w->evaluated[i], k, n = 0, s;
        Judged judged;
        for (k = w->jopens[q]; k < w->jopens[q + 1]; k++) {
            long g = w->judged.grade[w->jorder[k]];
            w->grades[n++] = g;
            if (g > 0)
                complete_num_rel++;
        }
        ctrec_summarise_grades(w->grades, (long) n, o->level, &judged);
        if (index_judgments(&w->judged, w->jorder, w->jopens[q], w->jopens[q + 1], (uint32_t) q,
                            w->judgments, &w->index) < 0)
            return 0;  /* judged twice: the line reader says where */
        n = 0;
        for (k = w->ropens[q]; k < w->ropens[q + 1]; k++) {
            size_t row = w->rorder[k];
            Hit *h = &w->hits[n++];
            h->doc = w->run.doc[row];
            h->len = w->run.len[row];
            h->score = w->run.score[row];
            h->hash = pair_hash((uint32_t) q, h->doc, (size_t) h->len);
        }
        if (has_repeats(w->hits, n, w->repeat_table, table_size(max_run) - 1))
            return 0;
        if (n == 0) {  /* -c: trec_eval.c's one-document stand-in ranking */
            Hit *h = &w->hits[n++];
            h->doc = STAND_IN;
            h->len = (Py_ssize_t) strlen(STAND_IN);
            h->score = 1.0;
            h->hash = pair_hash((uint32_t) q, STAND_IN, strlen(STAND_IN));
        }
        w->index.query = (uint32_t) q;
        ctrec_evaluate_query(w->hits, (Py_ssize_t) n, &judged, o, fs, grade_in_index,
                             &w->index, w->rels, w->ropens[q + 1] == w->ropens[q], w->values);
        for (s = 0; s < (size_t) fs->slots; s++)
            w->sums[s] += w->values[s];
        if (collect) {
            c->names[i] = w->queries.names[q];  /* NUL-ended in the buffer */
            memcpy(c->values + i * (size_t) fs->slots, w->values,
                   (size_t) fs->slots * sizeof(double));
            c->num_rel[i] = judged.num_rel;
            c->missing[i] = w->ropens[q + 1] == w->ropens[q];
            c->count = i + 1;
        }
        if (per_query) {
            char name[4096];
            size_t len = w->queries.lengths[q];
            if (len >= sizeof(name))
                return 0;
            memcpy(name, w->queries.names[q], len);
            name[len] = '\0';
            if (ctrec_print_query(&w->out, fs, name, w->values) < 0)
                return -1;
        }
    }
    c->complete_num_rel = complete_num_rel;
    if (summary) {
        if (runid_label) {
            size_t room = strlen(w->run.tag) + 64;
            int written;
            if (ctrec_text_reserve(&w->out, room) < 0)
                return -1;
            written = snprintf(w->out.data + w->out.size, room, "%-22s\tall\t%s\n", "runid",
                               w->run.tag);
            if (written < 0 || (size_t) written >= room)
                return -1;
            w->out.size += (size_t) written;
        }
        ctrec_finish_summary(fs, w->sums, (long) evaluated, complete_num_rel, o->complete);
        if (ctrec_print_summary(&w->out, fs, w->sums) < 0)
            return -1;
    }
    if (ctrec_text_reserve(&w->out, 1) < 0)
        return -1;
    return 1;
}

/* ------------------------------------------------------- a grouped run, streamed */

/* A run too large to hold is read in blocks into one reused buffer, each query's lines
 * (contiguous: a grouped run) parsed as read and evaluated as soon as its group ends,
 * while its lines are still in cache. Per query only its values stay (O(queries)); the
 * means are summed at the end in trec_eval's order, as evaluate_files_here sums them, so
 * they are the same to the last bit. A query that comes back after its group ended
 * stops the evaluation (status 2): evaluating it would need its earlier lines again. */
typedef struct {
    FileWork *w;
    const Families *fs;
    const Options *o;
    size_t judged_queries;   /* queries of the qrels (indexes below this have judgments) */
    size_t room;             /* rows the scratch arrays hold */
    long current;            /* the query whose group is being read, -1 none yet */
    const char *group_first; /* its first line's id, in the buffer */
    size_t rows_read;
    const char *comeback;    /* not grouped: where a query comes back, in the buffer */
    int status;              /* why a row was refused: 0 not plain, -1 memory, 2 not grouped */
    long complete_num_rel;
} Stream;

static int stream_room(Stream *st, size_t n)
{
    FileWork *w = st->w;
    size_t room = st->room ? st->room : 1024, table;
    void *p;
    if (n <= st->room)
        return 0;
    while (room < n)
        room *= 2;
    table = table_size(room);
    if (!(p = realloc(w->hits, room * sizeof(Hit))))
        return -1;
    w->hits = p;
    if (!(p = realloc(w->rels, room * sizeof(long))))
        return -1;
    w->rels = p;
    if (!(p = realloc(w->repeat_table, table * sizeof(size_t))))
        return -1;
    w->repeat_table = p;
    st->room = room;
    return 0;
}

/* Query ``q`` evaluated on the rows in w->run (none and ``missing``: -c's stand-in);
 * 1 done, 0 not plain (judged or returned twice), -1 out of memory. */
static int stream_evaluate(Stream *st, size_t q, int missing)
{
    FileWork *w = st->w;
    const Options *o = st->o;
    size_t slots = (size_t) st->fs->slots, k, n = 0;
    Judged judged;
    if (w->done_count == w->done_room) {
        size_t room = w->done_room ? 2 * w->done_room : 1024;
        void *p;
        if (!(p = realloc(w->done, room * sizeof(size_t))))
            return -1;
        w->done = p;
        if (!(p = realloc(w->done_values, room * (slots + 1) * sizeof(double))))
            return -1;
        w->done_values = p;
        if (!(p = realloc(w->done_num_rel, room * sizeof(long))))
            return -1;
        w->done_num_rel = p;
        if (!(p = realloc(w->done_missing, room)))
            return -1;
        w->done_missing = p;
        w->done_room = room;
    }
    for (k = w->jopens[q]; k < w->jopens[q + 1]; k++) {
        long g = w->judged.grade[w->jorder[k]];
        w->grades[n++] = g;
        if (g > 0)
            st->complete_num_rel++;
    }
    ctrec_summarise_grades(w->grades, (long) n, o->level, &judged);
    if (index_judgments(&w->judged, w->jorder, w->jopens[q], w->jopens[q + 1], (uint32_t) q,
                        w->judgments, &w->index) < 0)
        return 0;  /* judged twice: the line reader says where */
    n = w->run.count;
    if (stream_room(st, n + 1) < 0)
        return -1;
    for (k = 0; k < n; k++) {
        Hit *h = &w->hits[k];
        h->doc = w->run.doc[k];
        h->len = w->run.len[k];
        h->score = w->run.score[k];
        h->hash = pair_hash((uint32_t) q, h->doc, (size_t) h->len);
    }
    if (has_repeats(w->hits, n, w->repeat_table, table_size(n) - 1))
        return 0;
    if (n == 0) {  /* -c: trec_eval.c's one-document stand-in ranking */
        Hit *h = &w->hits[n++];
        h->doc = STAND_IN;
        h->len = (Py_ssize_t) strlen(STAND_IN);
        h->score = 1.0;
        h->hash = pair_hash((uint32_t) q, STAND_IN, strlen(STAND_IN));
    }
    w->index.query = (uint32_t) q;
    ctrec_evaluate_query(w->hits, (Py_ssize_t) n, &judged, o, st->fs, grade_in_index, &w->index,
                         w->rels, missing, w->values);
    memcpy(w->done_values + w->done_count * slots, w->values, slots * sizeof(double));
    w->done[w->done_count] = q;
    w->done_num_rel[w->done_count] = judged.num_rel;
    w->done_missing[w->done_count] = (unsigned char) missing;
    w->done_count++;
    return 1;
}

/* The group just read ends: evaluated when judged (1 done, else as stream_evaluate). */
static int stream_finish_group(Stream *st)
{
    FileWork *w = st->w;
    size_t q = (size_t) st->current;
    int status = 1;
    if (q < st->judged_queries && w->jopens[q + 1] > w->jopens[q])
        status = stream_evaluate(st, q, 0);
    w->run.count = 0;
    return status;
}

/* A query id of the run only, copied (the buffer is reused) and numbered. */
static long stream_add_query(FileWork *w, const char *name, size_t len)
{
    char *copy;
    long q;
    if (w->owned_count == w->owned_room) {
        size_t room = w->owned_room ? 2 * w->owned_room : 256;
        char **owned = realloc(w->owned, room * sizeof(char *));
        if (!owned)
            return -2;
        w->owned = owned;
        w->owned_room = room;
    }
    if (!(copy = malloc(len + 1)))
        return -2;
    memcpy(copy, name, len);
    copy[len] = '\0';
    w->owned[w->owned_count++] = copy;
    q = queries_find(&w->queries, copy, len, 1);
    if (q >= 0 && (size_t) q >= w->ran_room) {
        size_t room = 2 * w->ran_room + 256;
        unsigned char *ran = realloc(w->ran, room);
        if (!ran)
            return -2;
        memset(ran + w->ran_room, 0, room - w->ran_room);
        w->ran = ran;
        w->ran_room = room;
    }
    return q;
}

/* A run line (as take_row reads it), into the group being read or starting the next. */
static int take_stream_row(void *state, char **fields, size_t *lengths)
{
    Stream *st = (Stream *) state;
    FileWork *w = st->w;
    Rows *r = &w->run;
    double score;
    st->status = 0;
    if (lengths[2] > 0xffffffffu || read_score(fields[4], lengths[4], &score) < 0)
        return -1;
    if (st->current < 0 || lengths[0] != w->queries.lengths[st->current] ||
        memcmp(fields[0], w->queries.names[st->current], lengths[0]) != 0) {
        long q;
        if (st->current >= 0 && (st->status = stream_finish_group(st)) <= 0)
            return -1;
        q = queries_find(&w->queries, fields[0], lengths[0], 0);
        if (q == -1)
            q = stream_add_query(w, fields[0], lengths[0]);
        if (q < 0) {
            st->status = -1;
            return -1;
        }
        if (w->ran[q]) {
            st->status = 2;
            st->comeback = fields[0];
            return -1;
        }
        w->ran[q] = 1;
        st->current = q;
        st->group_first = fields[0];
    }
    if (r->count == r->capacity && rows_grow(r, r->capacity * 2 + 1024) < 0) {
        st->status = -1;
        return -1;
    }
    r->doc[r->count] = fields[2];
    r->len[r->count] = (uint32_t) lengths[2];
    r->score[r->count] = score;
    r->count++;
    r->tag = fields[5];
    st->rows_read++;
    st->status = 0;  /* split_lines may still refuse a later line: not plain */
    return 0;
}

/* The number of the line holding byte ``offset`` of the file (counted only when a query
 * comes back: the evaluation itself never counts lines); -1 when it cannot be read. */
static long line_of_offset(int fd, off_t offset)
{
    char block[1 << 16];
    off_t at = 0;
    long lines = 1;
    while (at < offset) {
        size_t want = (size_t) (offset - at) < sizeof(block) ? (size_t) (offset - at) : sizeof(block);
        ssize_t got = pread(fd, block, want, at);
        const char *p = block, *end;
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        end = block + got;
        while ((p = memchr(p, '\n', (size_t) (end - p))) != NULL) {
            lines++;
            p++;
        }
        at += got;
    }
    return lines;
}

/* Keep the run's last tag, out of the buffer about to be reused. */
static int stream_keep_tag(FileWork *w)
{
    size_t len = strlen(w->run.tag);
    if (len + 1 > w->tag_room) {
        char *tag = realloc(w->tag, len + 1);
        if (!tag)
            return -1;
        w->tag = tag;
        w->tag_room = len + 1;
    }
    memcpy(w->tag, w->run.tag, len + 1);
    return 0;
}

/* Move the buffer's bytes from ``keep`` on to ``to`` (the same buffer or a new one), and
 * the pointers into them: the rows of the group being read. */
static void stream_move(Stream *st, char *buf, size_t keep, size_t have, char *to)
{
    Rows *r = &st->w->run;
    size_t i;
    for (i = 0; i < r->count; i++)
        r->doc[i] = to + (r->doc[i] - (buf + keep));
    if (st->group_first)
        st->group_first = to + (st->group_first - (buf + keep));
    memmove(to, buf + keep, have - keep);
}

/* Read ``fd`` in blocks of ``block`` bytes, each complete line parsed as read. 1 read, 0
 * not plain, -1 out of memory, 2 not grouped (w->comeback_* say where). */
static int stream_run(Stream *st, int fd, size_t block)
{
    FileWork *w = st->w;
    size_t cap = 2 * block + 1, have = 0, from = 0;
    off_t base = 0;  /* the file offset of buf[0] */
    int eof = 0, status = 1;
    char *buf = malloc(cap);
    if (!buf)
        return -1;
    for (;;) {
        char *last = have > from ? memrchr(buf + from, '\n', have - from) : NULL;
        if (!last && eof && have > from) {
            buf[have++] = '\n';  /* the last line ends too (there is always room for it) */
            last = buf + have - 1;
        }
        if (last) {
            size_t end = (size_t) (last - buf) + 1, before = st->rows_read;
            if (!readable_text(buf + from, end - from)) {
                status = 0;  /* not UTF-8: the line reader says where */
                break;
            }
            st->status = 0;
            if (split_lines(buf + from, end - from, 0, take_stream_row, st) < 0) {
                status = st->status;
                if (status == 2) {
                    const char *id = st->comeback;  /* NUL-ended by split_lines */
                    size_t len = strlen(id);
                    w->comeback_line = line_of_offset(fd, base + (off_t) (id - buf));
                    if (!(w->comeback_query = malloc(len + 1)))
                        status = -1;
                    else
                        memcpy(w->comeback_query, id, len + 1);
                }
                break;
            }
            if (st->rows_read > before && stream_keep_tag(w) < 0) {
                status = -1;
                break;
            }
            from = end;
            continue;
        }
        if (eof)
            break;
        {
            /* keep the group being read (its rows point at its lines) and any partial line */
            size_t keep = w->run.count ? (size_t) (st->group_first - buf) : from;
            ssize_t got;
            if (cap - (have - keep) < block + 1) {
                size_t want = have - keep + block + 1;
                char *bigger = malloc(2 * cap > want ? 2 * cap : want);
                if (!bigger) {
                    status = -1;
                    break;
                }
                stream_move(st, buf, keep, have, bigger);
                free(buf);
                buf = bigger;
                cap = 2 * cap > want ? 2 * cap : want;
            } else if (keep) {
                stream_move(st, buf, keep, have, buf);
            }
            have -= keep;
            from -= keep;
            base += (off_t) keep;
            do
                got = read(fd, buf + have, block);
            while (got < 0 && errno == EINTR);
            if (got < 0) {
                status = 0;
                break;
            }
            if (got == 0)
                eof = 1;
            have += (size_t) got;
        }
    }
    if (status == 1 && st->current >= 0 && (status = stream_finish_group(st)) > 0)
        status = 1;
    free(buf);
    return status;
}

/* As evaluate_files_here, the run streamed (see Stream): 2 when it is not grouped. */
static int evaluate_stream_here(FileWork *w, const char *qrels_path, const char *run_path,
                                const Families *fs, const Options *o, int per_query,
                                int summary, const char *runid_label, int collect,
                                size_t block)
{
    FileValues *c = &w->collected;
    Stream st;
    NamedQuery *named;
    size_t qsize, nq, i, max_judged = 1, slots = (size_t) fs->slots;
    struct stat info;
    int fd, status;
    memset(&st, 0, sizeof(st));
    if (queries_init(&w->queries) < 0)
        return -1;
    w->judged.queries = w->run.queries = &w->queries;
    w->judged.grades = 1;
    if (!(w->qbuf = read_whole(qrels_path, &qsize)) || !readable_text(w->qbuf, qsize))
        return 0;
    if (rows_grow(&w->judged, count_lines(w->qbuf, qsize)) < 0)
        return -1;
    if (split_lines(w->qbuf, qsize, 1, take_row, &w->judged) < 0 || !w->judged.count)
        return 0;
    nq = w->queries.count;
    if (group_rows(&w->judged, nq, &w->jopens, &w->jorder) < 0)
        return -1;
    for (i = 0; i < nq; i++)
        if (w->jopens[i + 1] - w->jopens[i] > max_judged)
            max_judged = w->jopens[i + 1] - w->jopens[i];
    w->judgments = malloc(table_size(max_judged) * sizeof(Judgment));
    w->grades = malloc(max_judged * sizeof(long));
    w->values = calloc(slots + 1, sizeof(double));
    w->sums = calloc(slots + 1, sizeof(double));
    w->ran = calloc(nq, 1);
    w->ran_room = nq;
    if (!w->judgments || !w->grades || !w->values || !w->sums || !w->ran)
        return -1;
    st.w = w;
    st.fs = fs;
    st.o = o;
    st.judged_queries = nq;
    st.current = -1;
    fd = open(run_path, O_RDONLY);
    if (fd < 0)
        return 0;
    if (fstat(fd, &info) < 0 || !S_ISREG(info.st_mode) || info.st_size <= 0) {
        close(fd);
        return 0;
    }
    (void) posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    status = stream_run(&st, fd, block);
    close(fd);
    if (status != 1)
        return status;
    if (!st.rows_read)
        return 0;
    for (i = 0; i < nq; i++) {  /* judged queries the run lacks */
        if (w->jopens[i + 1] == w->jopens[i] || w->ran[i])
            continue;
        w->run.count = 0;
        if (o->complete) {
            if ((status = stream_evaluate(&st, i, 1)) <= 0)
                return status;
        } else if (index_judgments(&w->judged, w->jorder, w->jopens[i], w->jopens[i + 1],
                                   (uint32_t) i, w->judgments, &w->index) < 0) {
            return 0;  /* judged twice where nothing is evaluated: the reader too */
        }
    }
    if (!w->done_count)
        return 0;
    /* trec_eval's order, and the sums in it */
    if (!(named = malloc(w->done_count * sizeof(NamedQuery))))
        return -1;
    for (i = 0; i < w->done_count; i++) {
        named[i].name = w->queries.names[w->done[i]];
        named[i].length = w->queries.lengths[w->done[i]];
        named[i].index = i;
    }
    qsort(named, w->done_count, sizeof(NamedQuery), compare_query_names);
    if (collect) {
        c->names = malloc(w->done_count * sizeof(char *));
        c->values = malloc(w->done_count * (slots + 1) * sizeof(double));
        c->num_rel = malloc(w->done_count * sizeof(long));
        c->missing = malloc(w->done_count);
        if (!c->names || !c->values || !c->num_rel || !c->missing) {
            free(named);
            return -1;
        }
    }
    for (i = 0; i < w->done_count; i++) {
        size_t at = named[i].index, q = w->done[at], s;
        const double *values = w->done_values + at * slots;
        for (s = 0; s < slots; s++)
            w->sums[s] += values[s];
        if (collect) {
            c->names[i] = w->queries.names[q];  /* NUL-ended: qrels buffer or a copy */
            memcpy(c->values + i * slots, values, slots * sizeof(double));
            c->num_rel[i] = w->done_num_rel[at];
            c->missing[i] = w->done_missing[at];
            c->count = i + 1;
        }
        if (per_query) {
            char name[4096];
            size_t len = w->queries.lengths[q];
            if (len >= sizeof(name)) {
                free(named);
                return 0;
            }
            memcpy(name, w->queries.names[q], len);
            name[len] = '\0';
            if (ctrec_print_query(&w->out, fs, name, values) < 0) {
                free(named);
                return -1;
            }
        }
    }
    free(named);
    c->complete_num_rel = st.complete_num_rel;
    if (summary) {
        if (runid_label) {
            size_t room = strlen(w->tag) + 64;
            int written;
            if (ctrec_text_reserve(&w->out, room) < 0)
                return -1;
            written = snprintf(w->out.data + w->out.size, room, "%-22s\tall\t%s\n", "runid",
                               w->tag);
            if (written < 0 || (size_t) written >= room)
                return -1;
            w->out.size += (size_t) written;
        }
        ctrec_finish_summary(fs, w->sums, (long) w->done_count, st.complete_num_rel,
                             o->complete);
        if (ctrec_print_summary(&w->out, fs, w->sums) < 0)
            return -1;
    }
    if (ctrec_text_reserve(&w->out, 1) < 0)
        return -1;
    return 1;
}

/* A call's options and families; -1 with the error set. */

/* 1 done, 0 not plain or nothing evaluated, -1 out of memory, 2 a streamed run (read
 * ``block`` bytes at a time; 0: the whole file at once) not grouped by query. Numbers are
 * read and printed in the "C" locale whatever the application set (strtod and printf
 * follow LC_NUMERIC: a German locale would read "1.5e3" as 1 and print "0,1234");
 * uselocale is per thread. */
int ctrec_evaluate_plain_files(FileWork *w, const char *qrels_path, const char *run_path,
                               const Families *fs, const Options *o, int per_query,
                               int summary, const char *runid_label, int collect,
                               size_t block)
{
    int status;
    locale_t c_numbers = newlocale(LC_NUMERIC_MASK, "C", (locale_t) 0);
    locale_t previous;
    if (!c_numbers)
        return -1;
    previous = uselocale(c_numbers);
    status = block ? evaluate_stream_here(w, qrels_path, run_path, fs, o, per_query, summary,
                                          runid_label, collect, block)
                   : evaluate_files_here(w, qrels_path, run_path, fs, o, per_query, summary,
                                         runid_label, collect);
    uselocale(previous);
    freelocale(c_numbers);
    return status;
}

/* ------------------------------------------------ one file's rows, for _ctrec_read.c */

struct PlainFile {
    char *buf;
    Queries queries;
    Rows rows;
    size_t *opens, *order;
};

void ctrec_plain_free(PlainFile *f)
{
    if (!f)
        return;
    free(f->buf);
    queries_free(&f->queries);
    rows_free(&f->rows);
    free(f->opens);
    free(f->order);
    free(f);
}

static int plain_read_here(PlainFile *f, const char *path, int qrels, size_t offset,
                           size_t length)
{
    size_t size;
    if (queries_init(&f->queries) < 0)
        return -1;
    f->rows.queries = &f->queries;
    f->rows.grades = qrels;
    if (!(f->buf = read_range(path, offset, length, &size)) || !readable_text(f->buf, size))
        return 0;
    if (rows_grow(&f->rows, count_lines(f->buf, size)) < 0)
        return -1;
    if (split_lines(f->buf, size, qrels, take_row, &f->rows) < 0 || !f->rows.count)
        return 0;
    return group_rows(&f->rows, f->queries.count, &f->opens, &f->order) < 0 ? -1 : 1;
}

/* 1 read (``*out`` to free), 0 not plain or unreadable (the line reader says why), -1 out
 * of memory; scores read in the "C" locale, as ctrec_evaluate_plain_files reads them.
 * ``length`` > 0: only the bytes from ``offset`` on (whole lines: a run's query groups). */
int ctrec_plain_read(const char *path, int qrels, size_t offset, size_t length,
                     PlainFile **out)
{
    int status;
    locale_t c_numbers = newlocale(LC_NUMERIC_MASK, "C", (locale_t) 0);
    locale_t previous;
    PlainFile *f = calloc(1, sizeof(PlainFile));
    if (!c_numbers || !f) {
        if (c_numbers)
            freelocale(c_numbers);
        free(f);
        return -1;
    }
    previous = uselocale(c_numbers);
    status = plain_read_here(f, path, qrels, offset, length);
    uselocale(previous);
    freelocale(c_numbers);
    if (status <= 0)
        ctrec_plain_free(f);
    else
        *out = f;
    return status;
}

size_t ctrec_plain_queries(const PlainFile *f)
{
    return f->queries.count;
}

const char *ctrec_plain_query(const PlainFile *f, size_t q, size_t *len)
{
    *len = f->queries.lengths[q];
    return f->queries.names[q];
}

/* Query ``q``'s rows in file order: ``*rows`` .. ``*rows + count``. */
size_t ctrec_plain_rows(const PlainFile *f, size_t q, const size_t **rows)
{
    *rows = f->order + f->opens[q];
    return f->opens[q + 1] - f->opens[q];
}

void ctrec_plain_row(const PlainFile *f, size_t row, Hit *hit, long *grade)
{
    hit->doc = f->rows.doc[row];
    hit->len = (Py_ssize_t) f->rows.len[row];
    hit->score = f->rows.grades ? 0.0 : f->rows.score[row];
    hit->hash = hash_bytes(hit->doc, (size_t) hit->len, 0);
    *grade = f->rows.grades ? f->rows.grade[row] : 0;
}

const char *ctrec_plain_tag(const PlainFile *f)
{
    return f->rows.tag;
}

int ctrec_repeats(const Hit *hits, size_t n, size_t *table, size_t mask)
{
    return has_repeats(hits, n, table, mask);
}

size_t ctrec_table_size(size_t n)
{
    return table_size(n);
}


/* ------------------------------------------- where a grouped run's query groups start */

/* The file offset where each query's group of lines starts (the first at 0: comments and
 * blank lines go with the group before them), the file read ``block`` bytes at a time and
 * only each line's first field looked at, for the Python engine to read a run a few
 * groups at a time (ctrec_plain_read of a range). 1 done (``*starts``, ``*count``), 0
 * unreadable, -1 out of memory, 2 not grouped (``*line``, ``*query`` to free: where a
 * query comes back). */
int ctrec_run_groups(const char *path, size_t block, size_t **starts, size_t *count,
                     long *line, char **query)
{
    Queries seen;
    char **owned = NULL, *buf = NULL;
    size_t owned_count = 0, room = 0, have = 0, from = 0, cap = block + 1;
    off_t base = 0;
    long lines = 0, current = -1;
    int fd = -1, status = 1, eof = 0;
    *starts = NULL;
    *count = 0;
    if (queries_init(&seen) < 0) {
        queries_free(&seen);
        return -1;
    }
    if ((fd = open(path, O_RDONLY)) < 0) {
        status = 0;
        goto done;
    }
    (void) posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    if (!(buf = malloc(cap))) {
        status = -1;
        goto done;
    }
    for (;;) {
        char *nl = have > from ? memchr(buf + from, '\n', have - from) : NULL;
        size_t end, i, start;
        ssize_t got;
        if (!nl && eof && have > from)
            nl = buf + have;  /* the last line, without a newline */
        if (nl) {
            end = (size_t) (nl - buf);
            lines++;
            i = from;
            while (i < end && byte_class[(unsigned char) buf[i]] == 1)
                i++;
            start = i;
            while (i < end && byte_class[(unsigned char) buf[i]] == 0)
                i++;
            if (i > start && buf[start] != '#' &&
                (current < 0 || i - start != seen.lengths[current] ||
                 memcmp(buf + start, seen.names[current], i - start) != 0)) {
                long q = queries_find(&seen, buf + start, i - start, 0);
                char *copy;
                if (q >= 0) {
                    if (!(*query = malloc(i - start + 1))) {
                        status = -1;
                        goto done;
                    }
                    memcpy(*query, buf + start, i - start);
                    (*query)[i - start] = '\0';
                    *line = lines;
                    status = 2;
                    goto done;
                }
                if (owned_count == room) {
                    size_t more = room ? 2 * room : 256;
                    char **grown = realloc(owned, more * sizeof(char *));
                    size_t *longer = realloc(*starts, more * sizeof(size_t));
                    if (grown)
                        owned = grown;
                    if (longer)
                        *starts = longer;
                    if (!grown || !longer) {
                        status = -1;
                        goto done;
                    }
                    room = more;
                }
                if (!(copy = malloc(i - start + 1))) {
                    status = -1;
                    goto done;
                }
                memcpy(copy, buf + start, i - start);
                (*starts)[owned_count] = owned_count ? (size_t) base + from : 0;
                owned[owned_count++] = copy;
                if ((current = queries_find(&seen, copy, i - start, 1)) < 0) {
                    status = -1;
                    goto done;
                }
            }
            from = end + 1;
            continue;
        }
        if (eof)
            break;
        memmove(buf, buf + from, have - from);  /* the partial line */
        have -= from;
        base += (off_t) from;
        from = 0;
        if (cap - have < block + 1) {  /* a line longer than the buffer */
            char *bigger = realloc(buf, 2 * cap + block);
            if (!bigger) {
                status = -1;
                goto done;
            }
            buf = bigger;
            cap = 2 * cap + block;
        }
        do
            got = read(fd, buf + have, block);
        while (got < 0 && errno == EINTR);
        if (got < 0) {
            status = 0;
            goto done;
        }
        eof = got == 0;
        have += (size_t) got;
    }
    *count = owned_count;
done:
    if (fd >= 0)
        close(fd);
    free(buf);
    while (owned_count)
        free(owned[--owned_count]);
    free(owned);
    queries_free(&seen);
    if (status != 1) {
        free(*starts);
        *starts = NULL;
    }
    return status;
}
