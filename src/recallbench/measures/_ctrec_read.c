/* recallbench.measures._ctrec: plain TREC files read into Python objects.
 *
 * The compiled engine's reader (_ctrec_files.c) serves the evaluations that need Python
 * objects (recallbench's own measures on TREC files): the same bytes it takes for trec_eval's
 * measures, read the same way, returned as dicts and lists. What it does not take as plain
 * (a comment where the line reader refuses one, a pair judged twice, a document returned
 * twice, a byte that is not UTF-8...) returns None, and the line reader reads the file and
 * names the line of any problem. */
#include "_ctrec.h"

const char ctrec_read_qrels_doc[] =
    "read_qrels(path) -> {query: {document: grade}} | None\n\n"
    "A plain qrels file's judgments in file order, or None: the line reader then reads it.";

const char ctrec_read_run_doc[] =
    "read_run(path, offset=0, length=0) -> (query_ids, documents, scores, tag) | None\n\n"
    "A plain run file's rankings in trec_eval's order (score descending, then document id\n"
    "descending), queries in order of first appearance, and the tag of its last line; or\n"
    "None: the line reader then reads it. ``length`` > 0: the bytes from ``offset`` on only\n"
    "(whole lines, such as run_groups gives).";

const char ctrec_run_groups_doc[] =
    "run_groups(path, block) -> list[int] | (int, str) | None\n\n"
    "The offset where each query's group of lines starts in a run (the first 0), read\n"
    "``block`` bytes at a time; (line, query id) where a query comes back after its group\n"
    "ended (not grouped); None when unreadable.";

/* Read without the GIL: 1 read, 0 declined (None returned), -1 with the error set. */
static int read_plain(const char *path, int qrels, size_t offset, size_t length,
                      PlainFile **f)
{
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = ctrec_plain_read(path, qrels, offset, length, f);
    Py_END_ALLOW_THREADS
    if (status < 0)
        PyErr_NoMemory();
    return status;
}

static PyObject *decode(const char *text, size_t len)
{
    return PyUnicode_DecodeUTF8(text, (Py_ssize_t) len, "strict");  /* checked: UTF-8 */
}

PyObject *ctrec_py_read_qrels(PyObject *self, PyObject *args)
{
    const char *path;
    PlainFile *f = NULL;
    PyObject *qrels = NULL, *grades = NULL;
    size_t q, k;
    int status;
    (void) self;
    if (!PyArg_ParseTuple(args, "s", &path))
        return NULL;
    if ((status = read_plain(path, 1, 0, 0, &f)) <= 0)
        return status < 0 ? NULL : Py_NewRef(Py_None);
    if (!(qrels = PyDict_New()) || !(grades = PyDict_New()))
        goto fail;
    for (q = 0; q < ctrec_plain_queries(f); q++) {
        const size_t *rows;
        size_t len, count = ctrec_plain_rows(f, q, &rows);
        const char *name = ctrec_plain_query(f, q, &len);
        PyObject *judged = PyDict_New(), *key = decode(name, len);
        int failed = !judged || !key || PyDict_SetItem(qrels, key, judged) < 0;
        Py_XDECREF(key);
        Py_XDECREF(judged);
        if (failed)
            goto fail;
        for (k = 0; k < count; k++) {
            Hit hit;
            long g;
            PyObject *doc, *grade, *number;
            ctrec_plain_row(f, rows[k], &hit, &g);
            /* a few distinct grades: one int object each */
            if (!(number = PyLong_FromLong(g)))
                goto fail;
            grade = PyDict_SetDefault(grades, number, number);
            Py_DECREF(number);
            if (!grade || !(doc = decode(hit.doc, (size_t) hit.len)))
                goto fail;
            failed = PyDict_SetItem(judged, doc, grade) < 0;
            Py_DECREF(doc);
            if (failed)
                goto fail;
        }
        if ((size_t) PyDict_GET_SIZE(judged) != count) {  /* a pair judged twice */
            Py_DECREF(qrels);
            qrels = Py_NewRef(Py_None);
            break;
        }
    }
    Py_DECREF(grades);
    ctrec_plain_free(f);
    return qrels;
fail:
    Py_XDECREF(qrels);
    Py_XDECREF(grades);
    ctrec_plain_free(f);
    return NULL;
}

/* One query's ranking as two lists (documents, scores); 0 when a document repeats. */
static int ranking(const PlainFile *f, size_t q, Hit *hits, size_t *table, size_t mask,
                   PyObject **docs_out, PyObject **scores_out)
{
    const size_t *rows;
    size_t n = ctrec_plain_rows(f, q, &rows), k;
    long unused;
    PyObject *docs, *scores;
    for (k = 0; k < n; k++)
        ctrec_plain_row(f, rows[k], &hits[k], &unused);
    if (ctrec_repeats(hits, n, table, mask))
        return 0;
    rank_hits(hits, (Py_ssize_t) n);
    docs = PyList_New((Py_ssize_t) n);
    scores = PyList_New((Py_ssize_t) n);
    if (!docs || !scores)
        goto fail;
    for (k = 0; k < n; k++) {
        PyObject *doc = decode(hits[k].doc, (size_t) hits[k].len);
        PyObject *score = PyFloat_FromDouble(hits[k].score);
        if (!doc || !score) {
            Py_XDECREF(doc);
            Py_XDECREF(score);
            goto fail;
        }
        PyList_SET_ITEM(docs, (Py_ssize_t) k, doc);
        PyList_SET_ITEM(scores, (Py_ssize_t) k, score);
    }
    *docs_out = docs;
    *scores_out = scores;
    return 1;
fail:
    Py_XDECREF(docs);
    Py_XDECREF(scores);
    return -1;
}

PyObject *ctrec_py_read_run(PyObject *self, PyObject *args)
{
    const char *path;
    PlainFile *f = NULL;
    PyObject *names = NULL, *all_docs = NULL, *all_scores = NULL, *result = NULL;
    Hit *hits = NULL;
    size_t *table = NULL, q, most = 1, nq, size;
    Py_ssize_t offset = 0, length = 0;
    int status;
    (void) self;
    if (!PyArg_ParseTuple(args, "s|nn", &path, &offset, &length))
        return NULL;
    if (offset < 0 || length < 0) {
        PyErr_SetString(PyExc_ValueError, "offset and length must be 0 or more");
        return NULL;
    }
    if ((status = read_plain(path, 0, (size_t) offset, (size_t) length, &f)) <= 0)
        return status < 0 ? NULL : Py_NewRef(Py_None);
    nq = ctrec_plain_queries(f);
    for (q = 0; q < nq; q++) {
        const size_t *rows;
        size_t n = ctrec_plain_rows(f, q, &rows);
        most = n > most ? n : most;
    }
    size = ctrec_table_size(most);
    hits = PyMem_Malloc(most * sizeof(Hit));
    table = PyMem_Malloc(size * sizeof(size_t));
    names = PyList_New((Py_ssize_t) nq);
    all_docs = PyList_New((Py_ssize_t) nq);
    all_scores = PyList_New((Py_ssize_t) nq);
    if (!hits || !table) {
        PyErr_NoMemory();
        goto done;
    }
    if (!names || !all_docs || !all_scores)
        goto done;
    for (q = 0; q < nq; q++) {
        size_t len;
        const char *name = ctrec_plain_query(f, q, &len);
        PyObject *key = decode(name, len), *docs = NULL, *scores = NULL;
        if (!key)
            goto done;
        PyList_SET_ITEM(names, (Py_ssize_t) q, key);
        status = ranking(f, q, hits, table, size - 1, &docs, &scores);
        if (status < 0)
            goto done;
        if (status == 0) {  /* a document returned twice: the line reader names both lines */
            result = Py_NewRef(Py_None);
            goto done;
        }
        PyList_SET_ITEM(all_docs, (Py_ssize_t) q, docs);
        PyList_SET_ITEM(all_scores, (Py_ssize_t) q, scores);
    }
    {
        const char *tag = ctrec_plain_tag(f);
        PyObject *text = decode(tag, strlen(tag));  /* NUL-ended in the buffer */
        if (text)
            result = Py_BuildValue("(OOON)", names, all_docs, all_scores, text);
    }
done:
    Py_XDECREF(names);
    Py_XDECREF(all_docs);
    Py_XDECREF(all_scores);
    PyMem_Free(hits);
    PyMem_Free(table);
    ctrec_plain_free(f);
    return result;
}

PyObject *ctrec_py_run_groups(PyObject *self, PyObject *args)
{
    const char *path;
    Py_ssize_t block;
    size_t *starts = NULL, count = 0, i;
    long line = 0;
    char *query = NULL;
    int status;
    PyObject *result;
    (void) self;
    if (!PyArg_ParseTuple(args, "sn", &path, &block))
        return NULL;
    if (block <= 0) {
        PyErr_SetString(PyExc_ValueError, "block must be 1 or more");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    status = ctrec_run_groups(path, (size_t) block, &starts, &count, &line, &query);
    Py_END_ALLOW_THREADS
    if (status < 0)
        return PyErr_NoMemory();
    if (status == 0)
        return Py_NewRef(Py_None);
    if (status == 2) {
        result = Py_BuildValue("(lN)", line,
                               PyUnicode_DecodeUTF8(query, (Py_ssize_t) strlen(query), "replace"));
        free(query);
        return result;
    }
    result = PyList_New((Py_ssize_t) count);
    for (i = 0; result && i < count; i++) {
        PyObject *offset = PyLong_FromSize_t(starts[i]);
        if (!offset) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, (Py_ssize_t) i, offset);
    }
    free(starts);
    return result;
}
