/* recallbench.measures._ctrec: what its three files share (see _ctrec.c). */
#ifndef RECALLBENCH_CTREC_H
#define RECALLBENCH_CTREC_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RELVALUE_NONPOOL (-1)
#define RELVALUE_UNJUDGED (-2)
#define MIN_GEO_MEAN .00001
#define STAND_IN "ceci_nest_pas_un_docno"

/* Families, in the codes recallbench.measures._trec_native passes. */
enum {
    F_NUM_Q, F_NUM_RET, F_NUM_REL, F_NUM_REL_RET, F_MAP, F_GM_MAP, F_RPREC, F_BPREF,
    F_RECIP_RANK, F_IPREC, F_P, F_RECALL, F_NDCG, F_NDCG_CUT, F_MAP_CUT, F_SUCCESS,
    F_RELSTRING, F_INFAP, F_GM_BPREF, F_RPREC_MULT, F_UTILITY, F_11PT_AVG, F_BING, F_G,
    F_NDCG_REL, F_RNDCG, F_RELATIVE_P, F_SET_P, F_SET_RELATIVE_P, F_SET_RECALL, F_SET_MAP,
    F_SET_F, F_NUM_NONREL_JUDGED_RET, F_RBP, F_RBP_RESID, F_UNJ,
    F_COUNT
};

typedef struct {
    int code;
    Py_ssize_t count;      /* printed values (cutoffs; 1 for single-valued families) */
    Py_ssize_t num_params; /* parameters given (cutoffs, levels, coefficients, ...) */
    long *cutoffs;         /* the parameters as integers (cutoffs, relstring's length) */
    double *levels;        /* the parameters as given (levels, multiples, coefficients) */
    const char **labels;   /* printed names, count of them */
    Py_ssize_t slot;       /* first value's index in a query's values */
    Py_ssize_t width;      /* values it takes: count, or relstring's length (a character
                            * code a value, 0 past the end) */
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


/* Text grown as trec_eval prints it. */
typedef struct {
    char *data;
    size_t size, capacity;
} Text;

/* _ctrec_measures.c: one query's values, trec_eval's lines */
void ctrec_summarise_grades(long *grades, long n, long level, Judged *out);
Py_ssize_t ctrec_family_width(const Family *f);
long ctrec_family_depth(const Family *f);
void ctrec_evaluate_query(Hit *hits, Py_ssize_t n, const Judged *judged, const Options *o,
                          const Families *fs, GradeOf grade_of, const void *context,
                          long *rels, int stand_in, double *values);
int ctrec_text_reserve(Text *t, size_t more);
int ctrec_print_query(Text *t, const Families *fs, const char *qid, const double *values);
void ctrec_finish_summary(const Families *fs, double *sums, long num_queries,
                          long complete_num_rel, int complete);
int ctrec_print_summary(Text *t, const Families *fs, const double *sums);

/* _ctrec_files.c: plain TREC files, evaluated without the GIL */
typedef struct FileWork FileWork;

/* Per-query values of a file's evaluation, when collected (the Python API's results). */
typedef struct {
    size_t count;          /* evaluated queries, in trec_eval's order */
    const char **names;    /* NUL-ended */
    double *values;        /* count rows of the families' slots */
    long *num_rel;
    unsigned char *missing;
    long complete_num_rel; /* judgments graded above 0 (-c's num_rel) */
} FileValues;

void ctrec_init_classes(void);
FileWork *ctrec_file_work_new(void);
void ctrec_file_work_free(FileWork *w);
int ctrec_evaluate_plain_files(FileWork *w, const char *qrels_path, const char *run_path,
                               const Families *fs, const Options *o, int per_query,
                               int summary, const char *runid_label, int collect,
                               size_t block);
const FileValues *ctrec_file_work_values(const FileWork *w);
const char *ctrec_file_work_text(const FileWork *w, size_t *size);
const char *ctrec_file_work_tag(const FileWork *w);
const char *ctrec_file_work_comeback(const FileWork *w, long *line);

/* _ctrec_files.c: one plain file's rows grouped by query, for _ctrec_read.c */
typedef struct PlainFile PlainFile;

int ctrec_plain_read(const char *path, int qrels, size_t offset, size_t length,
                     PlainFile **out);
int ctrec_run_groups(const char *path, size_t block, size_t **starts, size_t *count,
                     long *line, char **query);
void ctrec_plain_free(PlainFile *f);
size_t ctrec_plain_queries(const PlainFile *f);
const char *ctrec_plain_query(const PlainFile *f, size_t q, size_t *len);
size_t ctrec_plain_rows(const PlainFile *f, size_t q, const size_t **rows);
void ctrec_plain_row(const PlainFile *f, size_t row, Hit *hit, long *grade);
const char *ctrec_plain_tag(const PlainFile *f);
int ctrec_repeats(const Hit *hits, size_t n, size_t *table, size_t mask);
size_t ctrec_table_size(size_t n);

/* _ctrec_measures.c: trec_eval's order of a ranking (score descending, then id
 * descending) */
void rank_hits(Hit *hits, Py_ssize_t n);

/* _ctrec_read.c: plain files as Python objects */
PyObject *ctrec_py_read_qrels(PyObject *self, PyObject *args);
PyObject *ctrec_py_read_run(PyObject *self, PyObject *args);
PyObject *ctrec_py_run_groups(PyObject *self, PyObject *args);
extern const char ctrec_read_qrels_doc[];
extern const char ctrec_read_run_doc[];
extern const char ctrec_run_groups_doc[];

#endif
