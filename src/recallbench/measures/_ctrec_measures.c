/* recallbench.measures._ctrec: trec_eval's measures for one query, and its printed lines.
 *
 * calc_family ports the m_*.c file named at each official family (the others are in
 * _ctrec_all_trec.c); ctrec_evaluate_query does what form_res_rels.c does before them
 * (rank, cut at -M, grade, drop unjudged under -J). */
#include "_ctrec_res_rels.h"

#include <math.h>
#include <stdio.h>

/* ---------------------------------------------------------------- measures */

/* m_bpref.c (and m_gm_bpref.c before its log) */
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
    case F_BPREF:
        v[0] = ctrec_bpref(rr, level);
        return;
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
    default:
        ctrec_calc_all_trec(f, rr, level, v);
    }
}

/* Values a family takes in a query's row: relstring a character a value. */
Py_ssize_t ctrec_family_width(const Family *f)
{
    if (f->code == F_RELSTRING)
        return f->num_params == 1 && f->cutoffs[0] > 0 ? (Py_ssize_t) f->cutoffs[0] : 0;
    return f->count;
}

/* The ranks whose grades a family reads (its largest cutoff), -1 for every rank. */
long ctrec_family_depth(const Family *f)
{
    Py_ssize_t j;
    long depth = 0;
    switch (f->code) {
    case F_NUM_Q:
    case F_NUM_RET:
    case F_NUM_REL:
        return 0;
    case F_P:
    case F_RECALL:
    case F_NDCG_CUT:
    case F_MAP_CUT:
    case F_SUCCESS:
    case F_RELATIVE_P:
    case F_UNJ:
    case F_RELSTRING:
        for (j = 0; j < f->num_params; j++)
            if (f->cutoffs[j] > depth)
                depth = f->cutoffs[j];
        return depth;
    default:
        return -1;
    }
}

static int is_long_family(int code)
{
    return code == F_NUM_Q || code == F_NUM_RET || code == F_NUM_REL || code == F_NUM_REL_RET ||
           code == F_NUM_NONREL_JUDGED_RET;
}

/* trec_eval.c: what a stand-in ranking (-c) leaves, by printed name */
static int cleared_for_stand_in(const char *label)
{
    return strcmp(label, "num_ret") == 0 || strcmp(label, "utility") == 0 ||
           strcmp(label, "relstring") == 0 || strncmp(label, "unj", 3) == 0 ||
           strcmp(label, "rbp_resid") == 0;
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
void rank_hits(Hit *hits, Py_ssize_t n)
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

/* Judged from a query's grades (reordered in place; the ideal gains are a prefix). A
 * query whose grades are all below 0 has nothing relevant, non-relevant or of any gain:
 * the Python engine's values (trec_eval reads stale levels there, or fails). */
void ctrec_summarise_grades(long *grades, long n, long level, Judged *out)
{
    long i, kept = 0;
    out->num_rel = out->num_nonrel = 0;
    for (i = 0; i < n; i++) {
        long g = grades[i];
        if (g < 0)
            continue;
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
}

/* One query: hits ranked, cut, graded (to the depth the families read), judged-only;
 * values computed. ``rels`` has room for n longs. */
void ctrec_evaluate_query(Hit *hits, Py_ssize_t n, const Judged *judged, const Options *o,
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
    rr.num_nonpool = 0;
    rr.num_unjudged = 0;
    for (i = 0; i < n; i++) {
        long r = hits[i].rel;
        if (o->judged_only) {
            if (r < 0)
                continue;
            if (r >= o->level)
                rr.num_rel_ret++;
        } else if (r == RELVALUE_NONPOOL) {
            rr.num_nonpool++;
        } else if (r == RELVALUE_UNJUDGED) {
            rr.num_unjudged++;
        } else if (r >= o->level) {
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
        Py_ssize_t j;
        calc_family(fam, &rr, o->level, values + fam->slot);
        if (stand_in)
            for (j = 0; j < fam->count; j++)
                if (cleared_for_stand_in(fam->labels[j]))
                    values[fam->slot + j] = 0;  /* relstring: an empty string */
    }
}

/* ---------------------------------------------------------------- output */

int ctrec_text_reserve(Text *t, size_t more)
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
    if (ctrec_text_reserve(t, room) < 0)
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

/* m_relstring.c's "%-22s\t%s\t'%s'\n" */
static int text_relstring(Text *t, const Family *fam, const char *qid, const double *values)
{
    Py_ssize_t j;
    size_t room = strlen(fam->labels[0]) + strlen(qid) + (size_t) fam->width + 64;
    int written;
    if (ctrec_text_reserve(t, room) < 0)
        return -1;
    written = snprintf(t->data + t->size, room, "%-22s\t%s\t'", fam->labels[0], qid);
    if (written < 0 || (size_t) written >= room)
        return -1;
    t->size += (size_t) written;
    for (j = 0; j < fam->width && values[fam->slot + j] != 0; j++)
        t->data[t->size++] = (char) values[fam->slot + j];
    t->data[t->size++] = '\'';
    t->data[t->size++] = '\n';
    return 0;
}

int ctrec_print_query(Text *t, const Families *fs, const char *qid, const double *values)
{
    Py_ssize_t f, j;
    for (f = 0; f < fs->count; f++) {
        const Family *fam = &fs->families[f];
        if (fam->code == F_RELSTRING) {
            if (text_relstring(t, fam, qid, values) < 0)
                return -1;
            continue;
        }
        if (fam->code == F_NUM_Q || fam->code == F_GM_MAP || fam->code == F_GM_BPREF)
            continue;  /* printed in the summary only */
        for (j = 0; j < fam->count; j++)
            if (text_line(t, fam->labels[j], qid, is_long_family(fam->code),
                          values[fam->slot + j]) < 0)
                return -1;
    }
    return 0;
}

/* Summary values from the per-query sums (meas_avg.c, m_num_q.c, m_num_rel.c). */
void ctrec_finish_summary(const Families *fs, double *sums, long num_queries,
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
        case F_NUM_NONREL_JUDGED_RET:
        case F_RELSTRING:  /* not printed */
            break;
        case F_NUM_REL:
            if (complete)
                v[0] = complete_num_rel;
            break;
        case F_GM_MAP:
        case F_GM_BPREF:  /* te_calc_avg_meas_s_gm */
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

int ctrec_print_summary(Text *t, const Families *fs, const double *sums)
{
    Py_ssize_t f, j;
    for (f = 0; f < fs->count; f++) {
        const Family *fam = &fs->families[f];
        if (fam->code == F_RELSTRING)
            continue;  /* per query only */
        for (j = 0; j < fam->count; j++)
            if (text_line(t, fam->labels[j], "all", is_long_family(fam->code),
                          sums[fam->slot + j]) < 0)
                return -1;
    }
    return 0;
}

