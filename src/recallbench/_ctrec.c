/* recallbench._ctrec: trec_eval's common measures in C, for plain files and in-memory dicts.
 *
 * A port of trec_eval 10.0's evaluation of the measures below (form_res_rels.c and the
 * m_*.c files named at each family), so that values agree with it to the last bit: the
 * same arithmetic in the same order, and the summary accumulated query by query in the
 * order trec_eval takes them (query ids sorted byte-wise). Everything it does not take it
 * declines by returning None: the Python engine then evaluates (and reports any problem),
 * so results and error messages are the same either way.
 *
 * Files are taken when plain: UTF-8 (ids compared as bytes, as trec_eval and the line
 * reader do) without NUL or the separator controls 0x1c-0x1f, six fields on every non-blank run line
 * and four on every qrels line, no line opening with '#', scores written as plain
 * decimals, grades as integers of at most 15 digits, no document returned twice for a
 * query and no pair judged twice, and every evaluated query with a grade of 0 or more.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RELVALUE_NONPOOL (-1)
#define RELVALUE_UNJUDGED (-2)
#define MIN_GEO_MEAN .00001
#define STAND_IN "ceci_nest_pas_un_docno"

/* Families, in the codes recallbench.measures._trec_native passes. */
enum {
    F_NUM_Q, F_NUM_RET, F_NUM_REL, F_NUM_REL_RET, F_MAP, F_GM_MAP, F_RPREC, F_BPREF,
    F_RECIP_RANK, F_IPREC, F_P, F_RECALL, F_NDCG, F_NDCG_CUT, F_MAP_CUT, F_SUCCESS,
    F_COUNT
};

typedef struct {
    int code;
    Py_ssize_t count;      /* values (cutoffs; 1 for single-valued families) */
    long *cutoffs;         /* integer parameters (P, recall, ndcg_cut, map_cut, success) */
    double *levels;        /* iprec_at_recall's recall levels */
    const char **labels;   /* printed names, count of them */
    Py_ssize_t slot;       /* first value's index in a query's values */
} Family;

typedef struct {
    Family *families;
    Py_ssize_t count;
    Py_ssize_t slots;
    long depth;            /* ranks whose grades any family reads; -1: all */
    PyObject *label_refs;  /* keeps the label strings alive */
} Families;

typedef struct {
    long level;
    long max_docs;         /* 0: all */
    int judged_only;
    int complete;
} Options;

/* One returned document of a query. */
typedef struct {
    const char *doc;
    Py_ssize_t len;
    double score;
    long rel;
    uint64_t hash;
    PyObject *key;         /* the id as a str (dicts) */
} Hit;

/* A returned document's grade (or RELVALUE_*), looked up only for the ranks a measure
 * reads. */
typedef long (*GradeOf)(const void *context, const Hit *hit);

/* What a query's judgments contribute (trec_eval's rel_levels, summarised). */
typedef struct {
    long num_rel;          /* grades >= max(level, 0) */
    long num_nonrel;       /* grades in [0, level): bpref's judged non-relevant */
    long *ideal;           /* grades >= 1, descending (the ideal ranking's gains) */
    long num_ideal;
} Judged;

/* trec_eval's RES_RELS for one query. */
typedef struct {
    long num_ret;
    long num_rel_ret;
    long num_rel;
    long num_nonrel;
    const long *rel;
    const long *ideal;
    long num_ideal;
} ResRels;

/* ---------------------------------------------------------------- measures */

static void calc_family(const Family *f, const ResRels *rr, long level, double *v)
{
    long i, rel_so_far = 0;
    double sum = 0.0;
    switch (f->code) {
    case F_NUM_Q:
        v[0] = 1;
        return;
    case F_NUM_RET:
        v[0] = rr->num_ret;
        return;
    case F_NUM_REL:
        v[0] = rr->num_rel;
        return;
    case F_NUM_REL_RET:
        v[0] = rr->num_rel_ret;
        return;
    case F_MAP:  /* m_map.c */
    case F_GM_MAP:  /* m_gm_map.c */
        for (i = 0; i < rr->num_ret; i++) {
            if (rr->rel[i] >= level) {
                rel_so_far++;
                sum += (double) rel_so_far / (double) (i + 1);
            }
        }
        if (f->code == F_MAP) {
            v[0] = rel_so_far ? sum / (double) rr->num_rel : 0.0;
        } else {
            if (rel_so_far)
                sum = sum / (double) rr->num_rel;
            v[0] = log(sum > MIN_GEO_MEAN ? sum : MIN_GEO_MEAN);
        }
        return;
    case F_RPREC: {  /* m_Rprec.c */
        long look = rr->num_ret < rr->num_rel ? rr->num_ret : rr->num_rel;
        v[0] = 0.0;
        if (look == 0)
            return;
        for (i = 0; i < look; i++)
            if (rr->rel[i] >= level)
                rel_so_far++;
        v[0] = (double) rel_so_far / (double) rr->num_rel;
        return;
    }
    case F_BPREF: {  /* m_bpref.c */
        long nonrel_so_far = 0;
        double bpref = 0.0;
        for (i = 0; i < rr->num_ret; i++) {
            long r = rr->rel[i];
            if (r == RELVALUE_NONPOOL || r == RELVALUE_UNJUDGED)
                continue;
            if (r >= 0 && r < level) {
                nonrel_so_far++;
            } else {
                rel_so_far++;
                if (nonrel_so_far > 0) {
                    long a = nonrel_so_far < rr->num_rel ? nonrel_so_far : rr->num_rel;
                    long b = rr->num_nonrel < rr->num_rel ? rr->num_nonrel : rr->num_rel;
                    bpref += 1.0 - ((double) a / (double) b);
                } else {
                    bpref += 1.0;
                }
            }
        }
        if (rr->num_rel)
            bpref /= rr->num_rel;
        v[0] = bpref;
        return;
    }
    case F_RECIP_RANK:  /* m_recip_rank.c */
        for (i = 0; i < rr->num_ret; i++)
            if (rr->rel[i] >= level)
                break;
        v[0] = i < rr->num_ret ? 1.0 / (double) (i + 1) : 0.0;
        return;
    case F_IPREC: {  /* m_iprec_at_recall.c */
        long cuts[64];
        long current = f->count - 1;
        double precis, int_precis;
        for (i = 0; i < f->count; i++) {
            cuts[i] = lround(f->levels[i] * rr->num_rel);
            v[i] = 0.0;
        }
        while (current >= 0 && cuts[current] > rr->num_rel_ret)
            current--;
        precis = (double) rr->num_rel_ret / (double) rr->num_ret;
        int_precis = precis;
        rel_so_far = rr->num_rel_ret;
        for (i = rr->num_ret; i > 0 && rel_so_far > 0; i--) {
            precis = (double) rel_so_far / (double) i;
            if (int_precis < precis)
                int_precis = precis;
            if (rr->rel[i - 1] >= level) {
                while (current >= 0 && rel_so_far == cuts[current]) {
                    v[current] = int_precis;
                    current--;
                }
                rel_so_far--;
            }
        }
        while (current >= 0) {
            v[current] = int_precis;
            current--;
        }
        return;
    }
    case F_P:  /* m_P.c */
    case F_RECALL:  /* m_recall.c */
    case F_MAP_CUT:  /* m_map_cut.c */
    case F_SUCCESS: {  /* m_success.c */
        Py_ssize_t c = 0;
        int code = f->code;
        for (c = 0; c < f->count; c++)
            v[c] = 0.0;
        if ((code == F_RECALL || code == F_MAP_CUT) && rr->num_rel == 0)
            return;
        c = 0;
        for (i = 0; i < rr->num_ret; i++) {
            if (i == f->cutoffs[c]) {
                v[c] = code == F_P ? (double) rel_so_far / (double) i
                     : code == F_RECALL ? (double) rel_so_far / (double) rr->num_rel
                     : code == F_MAP_CUT ? sum / (double) rr->num_rel
                     : (rel_so_far ? 1.0 : 0.0);
                if (++c == f->count)
                    break;
            }
            if (rr->rel[i] >= level) {
                rel_so_far++;
                if (code == F_MAP_CUT)
                    sum += (double) rel_so_far / (double) (i + 1);
            }
        }
        for (; c < f->count; c++)
            v[c] = code == F_P ? (double) rel_so_far / (double) f->cutoffs[c]
                 : code == F_RECALL ? (double) rel_so_far / (double) rr->num_rel
                 : code == F_MAP_CUT ? sum / (double) rr->num_rel
                 : (rel_so_far ? 1.0 : 0.0);
        return;
    }
    case F_NDCG: {  /* m_ndcg.c, default gains: a grade's gain is the grade */
        double results_dcg = 0.0, ideal_dcg = 0.0;
        for (i = 0; i < rr->num_ret; i++) {
            long r = rr->rel[i];
            if (r > 0)
                results_dcg += (double) r / log2((double) (i + 2));
        }
        for (i = 0; i < rr->num_ideal; i++)
            ideal_dcg += (double) rr->ideal[i] / log2((double) (i + 2));
        v[0] = ideal_dcg > 0.0 ? results_dcg / ideal_dcg : 0.0;
        return;
    }
    case F_NDCG_CUT: {  /* m_ndcg_cut.c */
        Py_ssize_t c = 0;
        double ideal_dcg = 0.0;
        for (c = 0; c < f->count; c++)
            v[c] = 0.0;
        c = 0;
        for (i = 0; i < rr->num_ret; i++) {
            if (i == f->cutoffs[c]) {
                v[c] = sum;
                if (++c == f->count)
                    break;
            }
            if (rr->rel[i] > 0)
                sum += (double) rr->rel[i] / log2((double) (i + 2));
        }
        for (; c < f->count; c++)
            v[c] = sum;
        c = 0;
        for (i = 0; i < rr->num_ideal; i++) {
            if (i == f->cutoffs[c]) {
                if (ideal_dcg > 0.0)
                    v[c] /= ideal_dcg;
                if (++c == f->count)
                    break;
            }
            ideal_dcg += (double) rr->ideal[i] / log2((double) (i + 2));
        }
        for (; c < f->count; c++)
            if (ideal_dcg > 0.0)
                v[c] /= ideal_dcg;
        return;
    }
    }
}

static int is_long_family(int code)
{
    return code == F_NUM_Q || code == F_NUM_RET || code == F_NUM_REL || code == F_NUM_REL_RET;
}

/* ------------------------------------------------------------------ ranking */

static int compare_ids(const Hit *x, const Hit *y)
{
    Py_ssize_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->doc, y->doc, (size_t) n);
    if (c)
        return c;
    return (x->len > y->len) - (x->len < y->len);
}

/* form_res_rels.c comp_sim_docno: score descending, then id descending (strcmp). */
static int compare_hits(const void *a, const void *b)
{
    const Hit *x = (const Hit *) a, *y = (const Hit *) b;
    if (x->score > y->score)
        return -1;
    if (x->score < y->score)
        return 1;
    return compare_ids(y, x);
}

static void insertion_sort(Hit *hits, Py_ssize_t n)
{
    Py_ssize_t i, j;
    for (i = 1; i < n; i++) {
        Hit moving = hits[i];
        for (j = i; j > 0 && compare_hits(&hits[j - 1], &moving) > 0; j--)
            hits[j] = hits[j - 1];
        hits[j] = moving;
    }
}

/* Rankings usually come best first, only tied ids out of trec_eval's order: then only
 * each group of tied scores is sorted (one qsort of the whole, a merge sort in glibc,
 * measured a third of a dict evaluation). */
static void rank_hits(Hit *hits, Py_ssize_t n)
{
    Py_ssize_t i, open;
    for (i = 1; i < n; i++)
        if (hits[i - 1].score < hits[i].score)
            break;
    if (i < n) {
        qsort(hits, (size_t) n, sizeof(Hit), compare_hits);
        return;
    }
    for (open = 0; open < n; open = i) {
        for (i = open + 1; i < n && hits[i].score == hits[open].score; i++)
            ;
        if (i - open < 2)
            continue;
        if (i - open <= 32)
            insertion_sort(hits + open, i - open);
        else
            qsort(hits + open, (size_t) (i - open), sizeof(Hit), compare_hits);
    }
}

static int compare_longs_descending(const void *a, const void *b)
{
    long x = *(const long *) a, y = *(const long *) b;
    return (x < y) - (x > y);
}

/* Gains descending: counted when they are small (grades usually are 1-3), else sorted. */
static void order_gains(long *gains, long n)
{
    long counts[65] = {0}, i, level, at = 0, top = 0;
    for (i = 0; i < n; i++) {
        if (gains[i] > 64) {
            qsort(gains, (size_t) n, sizeof(long), compare_longs_descending);
            return;
        }
        counts[gains[i]]++;
        if (gains[i] > top)
            top = gains[i];
    }
    for (level = top; level > 0; level--)
        for (i = 0; i < counts[level]; i++)
            gains[at++] = level;
}

/* Judged from a query's grades (reordered in place; the ideal gains are a prefix). */
static int summarise_grades(long *grades, long n, long level, Judged *out)
{
    long i, kept = 0, nonneg = 0;
    out->num_rel = out->num_nonrel = 0;
    for (i = 0; i < n; i++) {
        long g = grades[i];
        if (g < 0)
            continue;
        nonneg++;
        if (g >= level)
            out->num_rel++;
        else
            out->num_nonrel++;
        if (g > 0)
            grades[kept++] = g;
    }
    if (kept > 1)
        order_gains(grades, kept);
    out->ideal = grades;
    out->num_ideal = kept;
    /* no grade of 0 or more: trec_eval reads the previous query's levels; decline */
    return nonneg > 0;
}

/* One query: hits ranked, cut, graded (to the depth the families read), judged-only;
 * values computed. ``rels`` has room for n longs. */
static void evaluate_query(Hit *hits, Py_ssize_t n, const Judged *judged, const Options *o,
                           const Families *fs, GradeOf grade_of, const void *context,
                           long *rels, int stand_in, double *values)
{
    ResRels rr;
    Py_ssize_t i, f, depth;
    rank_hits(hits, n);
    if (o->max_docs > 0 && n > o->max_docs)
        n = o->max_docs;
    depth = o->judged_only || fs->depth < 0 || fs->depth > n ? n : fs->depth;
    for (i = 0; i < depth; i++)
        hits[i].rel = grade_of(context, &hits[i]);
    for (; i < n; i++)  /* below every cutoff read: no lookup (counted as unjudged) */
        hits[i].rel = RELVALUE_NONPOOL;
    rr.num_ret = 0;
    rr.num_rel_ret = 0;
    for (i = 0; i < n; i++) {
        long r = hits[i].rel;
        if (o->judged_only) {
            if (r < 0)
                continue;
            if (r >= o->level)
                rr.num_rel_ret++;
        } else if (r >= 0 && r >= o->level) {
            rr.num_rel_ret++;
        }
        rels[rr.num_ret++] = r;
    }
    rr.num_rel = judged->num_rel;
    rr.num_nonrel = judged->num_nonrel;
    rr.rel = rels;
    rr.ideal = judged->ideal;
    rr.num_ideal = judged->num_ideal;
    for (f = 0; f < fs->count; f++) {
        const Family *fam = &fs->families[f];
        calc_family(fam, &rr, o->level, values + fam->slot);
        if (stand_in && fam->code == F_NUM_RET)
            values[fam->slot] = 0;  /* trec_eval.c clears a stand-in ranking's num_ret */
    }
}

/* -------------------------------------------------------------- families */

static void free_families(Families *fs)
{
    Py_ssize_t i;
    if (fs->families) {
        for (i = 0; i < fs->count; i++) {
            PyMem_Free(fs->families[i].cutoffs);
            PyMem_Free(fs->families[i].levels);
            PyMem_Free((void *) fs->families[i].labels);
        }
        PyMem_Free(fs->families);
    }
    Py_XDECREF(fs->label_refs);
    fs->families = NULL;
}

/* [(code, (parameter, ...), (label, ...)), ...] */
static int parse_families(PyObject *spec, Families *fs)
{
    Py_ssize_t i, j, n;
    fs->families = NULL;
    fs->count = 0;
    fs->slots = 0;
    fs->depth = 0;
    fs->label_refs = NULL;
    if (!PyList_Check(spec)) {
        PyErr_SetString(PyExc_TypeError, "families must be a list");
        return -1;
    }
    n = PyList_GET_SIZE(spec);
    fs->families = PyMem_Calloc((size_t) (n ? n : 1), sizeof(Family));
    fs->label_refs = PyList_New(0);
    if (!fs->families || !fs->label_refs)
        return -1;
    for (i = 0; i < n; i++) {
        Family *f = &fs->families[i];
        PyObject *item = PyList_GET_ITEM(spec, i), *params, *labels;
        int code;
        if (!PyArg_ParseTuple(item, "iO!O!", &code, &PyTuple_Type, &params, &PyTuple_Type,
                              &labels))
            return -1;
        if (code < 0 || code >= F_COUNT || PyTuple_GET_SIZE(labels) < 1 ||
            PyTuple_GET_SIZE(labels) > 64) {
            PyErr_SetString(PyExc_ValueError, "bad measure family");
            return -1;
        }
        f->code = code;
        f->count = PyTuple_GET_SIZE(labels);
        if (code == F_NUM_REL_RET || code == F_MAP || code == F_GM_MAP || code == F_RPREC ||
            code == F_BPREF || code == F_RECIP_RANK || code == F_IPREC || code == F_NDCG)
            fs->depth = -1;  /* reads every rank */
        f->slot = fs->slots;
        fs->slots += f->count;
        fs->count++;
        f->labels = PyMem_Calloc((size_t) f->count, sizeof(char *));
        f->cutoffs = PyMem_Calloc((size_t) f->count, sizeof(long));
        f->levels = PyMem_Calloc((size_t) f->count, sizeof(double));
        if (!f->labels || !f->cutoffs || !f->levels)
            return -1;
        if (PyList_Append(fs->label_refs, labels) < 0)
            return -1;
        for (j = 0; j < f->count; j++) {
            f->labels[j] = PyUnicode_AsUTF8(PyTuple_GET_ITEM(labels, j));
            if (!f->labels[j])
                return -1;
            if (j < PyTuple_GET_SIZE(params)) {
                PyObject *p = PyTuple_GET_ITEM(params, j);
                f->levels[j] = PyFloat_AsDouble(p);
                f->cutoffs[j] = (long) f->levels[j];
                if (PyErr_Occurred())
                    return -1;
                if (code != F_IPREC && fs->depth >= 0 && f->cutoffs[j] > fs->depth)
                    fs->depth = f->cutoffs[j];
            }
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- output */

typedef struct {
    char *data;
    size_t size, capacity;
} Text;

static int text_reserve(Text *t, size_t more)
{
    if (t->size + more + 1 > t->capacity) {
        size_t capacity = t->capacity ? t->capacity : 4096;
        char *data;
        while (capacity < t->size + more + 1)
            capacity *= 2;
        data = realloc(t->data, capacity);
        if (!data)
            return -1;
        t->data = data;
        t->capacity = capacity;
    }
    return 0;
}

/* trec_eval's "%-22s\t%s\t%6.4f\n" (or "%ld" for counts) */
static int text_line(Text *t, const char *label, const char *qid, int as_long, double value)
{
    int written;
    size_t room = strlen(label) + strlen(qid) + 64;
    if (text_reserve(t, room) < 0)
        return -1;
    if (as_long)
        written = snprintf(t->data + t->size, room, "%-22s\t%s\t%ld\n", label, qid,
                           (long) value);
    else
        written = snprintf(t->data + t->size, room, "%-22s\t%s\t%6.4f\n", label, qid, value);
    if (written < 0 || (size_t) written >= room)
        return -1;
    t->size += (size_t) written;
    return 0;
}

static int print_query(Text *t, const Families *fs, const char *qid, const double *values)
{
    Py_ssize_t f, j;
    for (f = 0; f < fs->count; f++) {
        const Family *fam = &fs->families[f];
        if (fam->code == F_NUM_Q || fam->code == F_GM_MAP)
            continue;  /* printed in the summary only */
        for (j = 0; j < fam->count; j++)
            if (text_line(t, fam->labels[j], qid, is_long_family(fam->code),
                          values[fam->slot + j]) < 0)
                return -1;
    }
    return 0;
}

/* Summary values from the per-query sums (meas_avg.c, m_num_q.c, m_num_rel.c). */
static void finish_summary(const Families *fs, double *sums, long num_queries,
                           long complete_num_rel, int complete)
{
    Py_ssize_t f, j;
    for (f = 0; f < fs->count; f++) {
        const Family *fam = &fs->families[f];
        double *v = sums + fam->slot;
        switch (fam->code) {
        case F_NUM_Q:
            v[0] = num_queries;
            break;
        case F_NUM_RET:
        case F_NUM_REL_RET:
            break;
        case F_NUM_REL:
            if (complete)
                v[0] = complete_num_rel;
            break;
        case F_GM_MAP:
            if (num_queries > 0)
                v[0] = exp(v[0] / num_queries);
            break;
        default:
            if (num_queries)
                for (j = 0; j < fam->count; j++)
                    v[j] /= num_queries;
        }
    }
}

static int print_summary(Text *t, const Families *fs, const double *sums)
{
    Py_ssize_t f, j;
    for (f = 0; f < fs->count; f++) {
        const Family *fam = &fs->families[f];
        for (j = 0; j < fam->count; j++)
            if (text_line(t, fam->labels[j], "all", is_long_family(fam->code),
                          sums[fam->slot + j]) < 0)
                return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ plain files */

/* 0 other, 1 C isspace but newline, 2 newline, 3 not plain */
static unsigned char byte_class[256];

static void init_classes(void)
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

static char *read_whole(const char *path, size_t *size)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    char *buf;
    size_t got = 0;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
        close(fd);
        return NULL;
    }
    buf = malloc((size_t) st.st_size + 1);
    if (!buf) {
        close(fd);
        return NULL;
    }
    while (got < (size_t) st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t) st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t) r;
    }
    close(fd);
    if (got != (size_t) st.st_size) {
        free(buf);
        return NULL;
    }
    buf[got] = '\n';  /* the last line ends too */
    *size = got + 1;
    return buf;
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

/* Split ``buf`` into lines of exactly ``want`` fields (blank lines skipped), NUL-ending
 * every field in place; calls ``take`` with each line's fields. -1 when not plain. */
typedef int (*LineTaker)(void *state, char **fields, size_t *lengths);

static int split_lines(char *buf, size_t size, int want, LineTaker take, void *state)
{
    char *fields[8];
    size_t lengths[8];
    size_t i = 0;
    int count = 0;
    while (i < size) {
        unsigned char k = byte_class[(unsigned char) buf[i]];
        if (k == 3)
            return -1;
        if (k == 2) {
            if (count) {
                if (count != want || take(state, fields, lengths) < 0)
                    return -1;
                count = 0;
            }
            i++;
            continue;
        }
        if (k == 1) {
            i++;
            continue;
        }
        {
            size_t start = i;
            while (i < size && byte_class[(unsigned char) buf[i]] == 0)
                i++;
            if (i >= size)
                return -1;  /* cannot happen: the buffer ends with a newline */
            if (count == want)
                return -1;
            if (count == 0 && buf[start] == '#')
                return -1;  /* may be a comment: the line reader decides */
            fields[count] = buf + start;
            lengths[count] = i - start;
            count++;
            if (byte_class[(unsigned char) buf[i]] == 3)
                return -1;
            if (byte_class[(unsigned char) buf[i]] == 2) {
                if (count != want || take(state, fields, lengths) < 0)
                    return -1;
                count = 0;
            }
            buf[i] = '\0';
            i++;
        }
    }
    return count ? -1 : 0;
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

/* [+-]digits[.digits] with a digit somewhere, correctly rounded as Python's float and
 * Arrow's reader read it: up to 15 digits an exact integer over an exact power of ten,
 * one IEEE division (Clinger's fast path); longer ones through strtod. */
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
            if (digits > 15)
                break;
        } else if (s[i] == '.' && !dots) {
            dots++;
        } else {
            return -1;
        }
    }
    if (digits > 15) {  /* check the rest, then strtod */
        for (; i < n; i++)
            if (!(s[i] >= '0' && s[i] <= '9') && !(s[i] == '.' && !dots++))
                return -1;
        *out = strtod(s, NULL);
        return 0;
    }
    if (!digits)
        return -1;
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

typedef struct {
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
} FileWork;

static void free_work(FileWork *w)
{
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
}

/* 1 done (text in w->out), 0 not plain or nothing evaluated, -1 out of memory */
static int evaluate_plain_files(FileWork *w, const char *qrels_path, const char *run_path,
                                const Families *fs, const Options *o, int per_query,
                                int summary, const char *runid_label)
{
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
    if (split_lines(w->qbuf, qsize, 4, take_row, &w->judged) < 0 ||
        split_lines(w->rbuf, rsize, 6, take_row, &w->run) < 0 || !w->judged.count ||
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
    if (!w->repeat_table || !w->judgments || !w->grades || !w->rels || !w->hits || !w->values || !w->sums)
        return -1;
    for (i = 0; i < evaluated; i++) {
        size_t q = w->evaluated[i], k, n = 0, s;
        Judged judged;
        for (k = w->jopens[q]; k < w->jopens[q + 1]; k++) {
            long g = w->judged.grade[w->jorder[k]];
            w->grades[n++] = g;
            if (g > 0)
                complete_num_rel++;
        }
        if (!summarise_grades(w->grades, (long) n, o->level, &judged))
            return 0;
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
        evaluate_query(w->hits, (Py_ssize_t) n, &judged, o, fs, grade_in_index, &w->index,
                       w->rels, w->ropens[q + 1] == w->ropens[q], w->values);
        for (s = 0; s < (size_t) fs->slots; s++)
            w->sums[s] += w->values[s];
        if (per_query) {
            char name[4096];
            size_t len = w->queries.lengths[q];
            if (len >= sizeof(name))
                return 0;
            memcpy(name, w->queries.names[q], len);
            name[len] = '\0';
            if (print_query(&w->out, fs, name, w->values) < 0)
                return -1;
        }
    }
    if (summary) {
        if (runid_label) {
            size_t room = strlen(w->run.tag) + 64;
            int written;
            if (text_reserve(&w->out, room) < 0)
                return -1;
            written = snprintf(w->out.data + w->out.size, room, "%-22s\tall\t%s\n", "runid",
                               w->run.tag);
            if (written < 0 || (size_t) written >= room)
                return -1;
            w->out.size += (size_t) written;
        }
        finish_summary(fs, w->sums, (long) evaluated, complete_num_rel, o->complete);
        if (print_summary(&w->out, fs, w->sums) < 0)
            return -1;
    }
    if (text_reserve(&w->out, 1) < 0)
        return -1;
    return 1;
}

/* A call's options and families; -1 with the error set. */
static int set_up_call(long level, long max_docs, int judged_only, int complete,
                       PyObject *spec, Options *o, Families *fs)
{
    o->level = level;
    o->max_docs = max_docs;
    o->judged_only = judged_only;
    o->complete = complete;
    if (max_docs < 0) {
        PyErr_SetString(PyExc_ValueError, "max_docs must be 0 (all) or more");
        return -1;
    }
    if (parse_families(spec, fs) < 0) {
        free_families(fs);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(evaluate_files_doc,
"evaluate_files(qrels, run, families, level, max_docs, judged_only, complete, per_query,\n"
"               summary, runid) -> (str, str) | None\n\n"
"trec_eval's output for two plain files and the run's tag, or None when they are not\n"
"plain (or nothing is evaluated): the Python engine then takes them.");

static PyObject *py_evaluate_files(PyObject *self, PyObject *args)
{
    const char *qrels, *run;
    PyObject *spec, *result = NULL;
    long level, max_docs;
    int judged_only, complete, per_query, summary, runid, status;
    Families fs;
    Options o;
    FileWork w;
    (void) self;
    if (!PyArg_ParseTuple(args, "ssO!llppppp", &qrels, &run, &PyList_Type, &spec, &level,
                          &max_docs, &judged_only, &complete, &per_query, &summary, &runid))
        return NULL;
    if (set_up_call(level, max_docs, judged_only, complete, spec, &o, &fs) < 0)
        return NULL;
    memset(&w, 0, sizeof(w));
    Py_BEGIN_ALLOW_THREADS
    status = evaluate_plain_files(&w, qrels, run, &fs, &o, per_query, summary,
                                  runid ? "runid" : NULL);
    Py_END_ALLOW_THREADS
    if (status < 0)
        PyErr_NoMemory();
    else if (status == 0)
        result = Py_NewRef(Py_None);
    else {
        PyObject *text = PyUnicode_DecodeUTF8(w.out.data, (Py_ssize_t) w.out.size, NULL);
        result = text ? Py_BuildValue("(Ns)", text, w.run.tag) : NULL;
    }
    free_work(&w);
    free_families(&fs);
    return result;
}

/* --------------------------------------------------------------- dicts */

PyDoc_STRVAR(evaluate_dicts_doc,
"evaluate_dicts(qrels, run, families, level, max_docs, judged_only, complete)\n"
"    -> (query_ids, values, missing, num_rel) | None\n\n"
"Per-query values of ``{query: {doc: grade}}`` against ``{query: {doc: score}}`` (str ids,\n"
"int grades, float or int scores, no NaN), queries in trec_eval's order; ``values`` holds\n"
"one list a family slot, ``missing`` which queries the run lacks (-c), ``num_rel`` each\n"
"query's relevant judgments. None for anything\n"
"else (the Python engine then converts and evaluates).");

static PyObject *stand_in_key;  /* STAND_IN as a str */

/* The grade in a query's judgments (exact str keys: the lookup cannot fail; the values
 * were checked to be ints in range). */
static long grade_in_dict(const void *context, const Hit *hit)
{
    PyObject *grade = PyDict_GetItem((PyObject *) context, hit->key);
    long g;
    if (!grade)
        return RELVALUE_NONPOOL;
    g = PyLong_AsLong(grade);
    return g < 0 ? RELVALUE_UNJUDGED : g;
}

static PyObject *py_evaluate_dicts(PyObject *self, PyObject *args)
{
    PyObject *qrels, *run, *spec, *names = NULL, *values = NULL, *missing = NULL;
    PyObject *relevant = NULL;
    PyObject *result = NULL, *key, *judged;
    long level, max_docs;
    int judged_only, complete;
    Py_ssize_t pos, n_eval = 0, max_run = 1, max_judged = 1, i, s;
    Families fs;
    Options o;
    Hit *hits = NULL;
    long *grades = NULL, *rels = NULL;
    double *slot_values = NULL;
    (void) self;
    if (!PyArg_ParseTuple(args, "O!O!O!llpp", &PyDict_Type, &qrels, &PyDict_Type, &run,
                          &PyList_Type, &spec, &level, &max_docs, &judged_only, &complete))
        return NULL;
    if (set_up_call(level, max_docs, judged_only, complete, spec, &o, &fs) < 0)
        return NULL;
    /* the evaluated queries: judged ones the run has (or all judged, with -c) */
    names = PyList_New(0);
    if (!names)
        goto done;
    pos = 0;
    while (PyDict_Next(qrels, &pos, &key, &judged)) {
        PyObject *ranking;
        if (!PyUnicode_CheckExact(key) || !PyDict_CheckExact(judged))
            goto decline;
        if (PyDict_GET_SIZE(judged) == 0)
            goto decline;  /* the Python engine evaluates a query without judgments */
        ranking = PyDict_GetItemWithError(run, key);
        if (!ranking && PyErr_Occurred())
            goto done;
        if (ranking && (!PyDict_CheckExact(ranking) || PyDict_GET_SIZE(ranking) == 0))
            goto decline;  /* an empty ranking, too: not trec_eval's stand-in */
        if (!ranking && !complete)
            continue;
        if (ranking && PyDict_GET_SIZE(ranking) > max_run)
            max_run = PyDict_GET_SIZE(ranking);
        if (PyDict_GET_SIZE(judged) > max_judged)
            max_judged = PyDict_GET_SIZE(judged);
        if (PyList_Append(names, key) < 0)
            goto done;
    }
    pos = 0;
    while (PyDict_Next(run, &pos, &key, &judged))  /* other keys: the Python engine's str() */
        if (!PyUnicode_CheckExact(key))
            goto decline;
    if (PyList_Sort(names) < 0)
        goto done;
    n_eval = PyList_GET_SIZE(names);
    if (!n_eval)
        goto decline;  /* nothing evaluated: the Python engine says so */
    hits = PyMem_Malloc((size_t) max_run * sizeof(Hit));
    rels = PyMem_Malloc((size_t) max_run * sizeof(long));
    grades = PyMem_Malloc((size_t) max_judged * sizeof(long));
    slot_values = PyMem_Calloc((size_t) fs.slots + 1, sizeof(double));
    values = PyList_New(fs.slots);
    missing = PyList_New(n_eval);
    relevant = PyList_New(n_eval);
    if (!hits || !rels || !grades || !slot_values || !values || !missing || !relevant) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    for (s = 0; s < fs.slots; s++) {
        PyObject *column = PyList_New(n_eval);
        if (!column)
            goto done;
        PyList_SET_ITEM(values, s, column);
    }
    for (i = 0; i < n_eval; i++) {
        PyObject *name = PyList_GET_ITEM(names, i), *ranking, *doc, *score;
        Py_ssize_t n = 0, k = 0;
        Judged summary;
        int stand_in;
        judged = PyDict_GetItem(qrels, name);
        pos = 0;
        while (PyDict_Next(judged, &pos, &doc, &score)) {
            long g;
            int overflow;
            if (!PyUnicode_CheckExact(doc) || !PyLong_CheckExact(score))
                goto decline;
            g = PyLong_AsLongAndOverflow(score, &overflow);
            if (overflow || g >= (1L << 53) || g <= -(1L << 53))
                goto decline;
            grades[k++] = g;
        }
        if (!summarise_grades(grades, (long) k, o.level, &summary))
            goto decline;
        ranking = PyDict_GetItem(run, name);
        stand_in = ranking == NULL;
        if (!stand_in) {
            pos = 0;
            while (PyDict_Next(ranking, &pos, &doc, &score)) {
                Hit *h = &hits[n++];
                if (!PyUnicode_CheckExact(doc))
                    goto decline;
                h->doc = PyUnicode_AsUTF8AndSize(doc, &h->len);
                if (!h->doc) {
                    PyErr_Clear();
                    goto decline;  /* lone surrogates: the Python engine orders them */
                }
                if (PyFloat_CheckExact(score))
                    h->score = PyFloat_AS_DOUBLE(score);
                else if (PyLong_CheckExact(score)) {
                    h->score = PyLong_AsDouble(score);
                    if (h->score == -1.0 && PyErr_Occurred()) {
                        PyErr_Clear();
                        goto decline;
                    }
                } else
                    goto decline;
                if (isnan(h->score))
                    goto decline;
                h->key = doc;
            }
        } else {
            Hit *h = &hits[n++];
            h->doc = STAND_IN;
            h->len = (Py_ssize_t) strlen(STAND_IN);
            h->score = 1.0;
            h->key = stand_in_key;
        }
        evaluate_query(hits, n, &summary, &o, &fs, grade_in_dict, judged, rels, stand_in,
                       slot_values);
        for (s = 0; s < fs.slots; s++) {
            PyObject *v = PyFloat_FromDouble(slot_values[s]);
            if (!v)
                goto done;
            PyList_SET_ITEM(PyList_GET_ITEM(values, s), i, v);
        }
        PyList_SET_ITEM(missing, i, Py_NewRef(stand_in ? Py_True : Py_False));
        {
            PyObject *count = PyLong_FromLong(summary.num_rel);
            if (!count)
                goto done;
            PyList_SET_ITEM(relevant, i, count);
        }
    }
    result = PyTuple_Pack(4, names, values, missing, relevant);
    goto done;
decline:
    if (!PyErr_Occurred())
        result = Py_NewRef(Py_None);
done:
    Py_XDECREF(names);
    Py_XDECREF(values);
    Py_XDECREF(missing);
    Py_XDECREF(relevant);
    PyMem_Free(hits);
    PyMem_Free(rels);
    PyMem_Free(grades);
    PyMem_Free(slot_values);
    free_families(&fs);
    return result;
}

static PyMethodDef methods[] = {
    {"evaluate_files", py_evaluate_files, METH_VARARGS, evaluate_files_doc},
    {"evaluate_dicts", py_evaluate_dicts, METH_VARARGS, evaluate_dicts_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ctrec",
    "trec_eval's common measures in C (see recallbench.measures._trec_native).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__ctrec(void)
{
    init_classes();
    stand_in_key = PyUnicode_InternFromString(STAND_IN);
    if (!stand_in_key)
        return NULL;
    return PyModule_Create(&module);
}
