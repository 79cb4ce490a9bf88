/* recallbench.measures._ctrec: the families -m all_trec adds to the official ones.
 *
 * Each case ports the m_*.c file named at it, statement for statement, so that values
 * agree with trec_eval 10.0 to the last bit. Gains are trec_eval's defaults (a grade's
 * gain is the grade; gain_init.c): the ideal ranking's gain at a position is then the
 * position's entry of the grades above 0 sorted descending, 0 past them, which is what
 * setup_gains' levels walk gives. */
#include "_ctrec_res_rels.h"

#include <math.h>

#define INFAP_EPSILON .00001

/* m_bpref.c; gm_bpref's per-query value too */
double ctrec_bpref(const ResRels *rr, long level)
{
    long i, rel_so_far = 0, nonrel_so_far = 0;
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
    return bpref;
}

/* get_gain (gain_init.c): a returned document's gain, 0 when unjudged or below 0 */
static double gain_of(long rel)
{
    return rel > 0 ? (double) rel : 0.0;
}

/* The ideal ranking's gain at position i (0-based). */
static double ideal_at(const ResRels *rr, long i)
{
    return i < rr->num_ideal ? (double) rr->ideal[i] : 0.0;
}

/* m_G.c */
static double calc_G(const ResRels *rr)
{
    double results_gain, sum_results = 0.0, ideal_gain, sum_ideal = 0.0, sum_cost = 0.0;
    double min_cost = 1.0, results_g = 0.0;
    long i;
    ideal_gain = ideal_at(rr, 0);
    for (i = 0; i < rr->num_ret && ideal_gain > 0.0; i++) {
        results_gain = gain_of(rr->rel[i]);
        sum_results += results_gain;
        ideal_gain = ideal_at(rr, i);
        if (ideal_gain > 0.0)
            sum_ideal += ideal_gain;
        if (ideal_gain >= min_cost)
            sum_cost += ideal_gain;
        else
            sum_cost += min_cost;
        if (results_gain != 0)
            results_g += results_gain / log2((double) (2 + sum_cost - sum_results));
    }
    while (i < rr->num_ret) {
        results_gain = gain_of(rr->rel[i]);
        sum_results += results_gain;
        sum_cost += min_cost;
        if (results_gain != 0)
            results_g += results_gain / log2((double) (2 + sum_cost - sum_results));
        i++;
    }
    while (ideal_gain > 0.0) {
        ideal_gain = ideal_at(rr, i);
        if (ideal_gain > 0.0)
            sum_ideal += ideal_gain;
        i++;
    }
    return sum_ideal > 0.0 ? results_g / sum_ideal : 0.0;
}

/* m_ndcg_rel.c */
static double calc_ndcg_rel(const ResRels *rr)
{
    double results_gain, results_dcg = 0.0, ideal_gain, ideal_dcg = 0.0, sum = 0.0;
    long num_rel_ret = 0, num_rel = 0, i;
    ideal_gain = ideal_at(rr, 0);
    for (i = 0; i < rr->num_ret && ideal_gain > 0.0; i++) {
        results_gain = gain_of(rr->rel[i]);
        if (results_gain != 0)
            results_dcg += results_gain / log2((double) (i + 2));
        ideal_gain = ideal_at(rr, i);
        if (ideal_gain > 0.0) {
            num_rel++;
            ideal_dcg += ideal_gain / log2((double) (i + 2));
        }
        if (results_gain > 0) {
            sum += results_dcg / ideal_dcg;
            num_rel_ret++;
        }
    }
    while (i < rr->num_ret) {
        results_gain = gain_of(rr->rel[i]);
        if (results_gain != 0)
            results_dcg += results_gain / log2((double) (i + 2));
        if (results_gain > 0) {
            sum += results_dcg / ideal_dcg;
            num_rel_ret++;
        }
        i++;
    }
    while (ideal_gain > 0.0) {
        ideal_gain = ideal_at(rr, i);
        if (ideal_gain > 0.0) {
            num_rel++;
            ideal_dcg += ideal_gain / log2((double) (i + 2));
        }
        i++;
    }
    sum += ((double) (num_rel - num_rel_ret)) * results_dcg / ideal_dcg;
    return sum > 0.0 ? sum / num_rel : 0.0;
}

/* m_Rndcg.c: NaN (0/0) when the relevant documents all have gain 0 (-l 0) */
static double calc_Rndcg(const ResRels *rr)
{
    double results_gain, results_dcg = 0.0, old_ideal_gain, ideal_gain, ideal_dcg = 0.0;
    double sum = 0.0;
    long num_changed_ideal_gain = 0, i;
    if (rr->num_rel == 0)
        return 0.0;
    ideal_gain = ideal_at(rr, 0);
    old_ideal_gain = ideal_gain;
    for (i = 0; i < rr->num_ret && ideal_gain > 0.0; i++) {
        results_gain = gain_of(rr->rel[i]);
        ideal_gain = ideal_at(rr, i);
        if (old_ideal_gain != ideal_gain) {  /* an R level ends before this rank */
            if (ideal_dcg > 0.0) {
                sum += results_dcg / ideal_dcg;
                num_changed_ideal_gain++;
            }
            old_ideal_gain = ideal_gain;
        }
        if (results_gain != 0)
            results_dcg += results_gain / log2((double) (i + 2));
        if (ideal_gain > 0.0)
            ideal_dcg += ideal_gain / log2((double) (i + 2));
    }
    if (i < rr->num_ret) {
        while (i < rr->num_ret) {
            results_gain = gain_of(rr->rel[i]);
            if (results_gain != 0)
                results_dcg += results_gain / log2((double) (i + 2));
            i++;
        }
        if (ideal_dcg > 0.0) {
            sum += results_dcg / ideal_dcg;
            num_changed_ideal_gain++;
        }
    }
    while (ideal_gain > 0.0) {
        ideal_gain = ideal_at(rr, i);
        if (old_ideal_gain != ideal_gain) {
            if (ideal_dcg > 0.0) {
                sum += results_dcg / ideal_dcg;
                num_changed_ideal_gain++;
            }
            old_ideal_gain = ideal_gain;
        }
        if (ideal_gain > 0.0)
            ideal_dcg += ideal_gain / log2((double) (i + 2));
        i++;
    }
    return sum / num_changed_ideal_gain;
}

/* m_infap.c */
static double calc_infap(const ResRels *rr, long level)
{
    long j, nonrel_so_far = 0, rel_so_far = 0, pool_unjudged_so_far = 0;
    double inf_ap = 0.0;
    for (j = 0; j < rr->num_ret; j++) {
        long r = rr->rel[j];
        if (r == RELVALUE_NONPOOL)
            continue;
        if (r == RELVALUE_UNJUDGED) {
            pool_unjudged_so_far++;
            continue;
        }
        if (r >= 0 && r < level) {
            nonrel_so_far++;
        } else {
            rel_so_far++;
            if (0 == j) {
                inf_ap += 1.0;
            } else {
                double fj = (double) j;
                inf_ap += 1.0 / (fj + 1.0) +
                    (fj / (fj + 1.0)) *
                    ((rel_so_far - 1 + nonrel_so_far + pool_unjudged_so_far) / fj) *
                    ((rel_so_far - 1 + INFAP_EPSILON) /
                     (rel_so_far - 1 + nonrel_so_far + 2 * INFAP_EPSILON));
            }
        }
    }
    if (rr->num_rel)
        inf_ap /= rr->num_rel;
    return inf_ap;
}

/* m_Rprec_mult.c: multiples ascending */
static void calc_Rprec_mult(const Family *f, const ResRels *rr, long level, double *v)
{
    long cutoffs[64], current_cut = f->count - 1, rel_so_far, i;
    for (i = 0; i < f->count; i++) {
        cutoffs[i] = (long) (f->levels[i] * rr->num_rel + 0.9);
        v[i] = 0.0;
    }
    while (current_cut >= 0 && cutoffs[current_cut] > rr->num_ret) {
        v[current_cut] = (double) rr->num_rel_ret / (double) cutoffs[current_cut];
        current_cut--;
    }
    rel_so_far = rr->num_rel_ret;
    for (i = rr->num_ret; i > 0 && rel_so_far > 0; i--) {
        double precis = (double) rel_so_far / (double) i;
        while (current_cut >= 0 && i == cutoffs[current_cut]) {
            v[current_cut] = precis;
            current_cut--;
        }
        if (rr->rel[i - 1] >= level)
            rel_so_far--;
    }
}

/* m_11pt_avg.c: levels ascending (as given; the Python side checks) */
static double calc_11pt_avg(const Family *f, const ResRels *rr, long level)
{
    long cutoffs[64], current_cut = f->num_params - 1, rel_so_far, i;
    double precis, int_precis, sum = 0.0;
    for (i = 0; i < f->num_params; i++)
        cutoffs[i] = lround(f->levels[i] * rr->num_rel);
    while (current_cut >= 0 && cutoffs[current_cut] > rr->num_rel_ret)
        current_cut--;
    precis = (double) rr->num_rel_ret / (double) rr->num_ret;
    int_precis = precis;
    rel_so_far = rr->num_rel_ret;
    for (i = rr->num_ret; i > 0 && rel_so_far > 0; i--) {
        precis = (double) rel_so_far / (double) i;
        if (int_precis < precis)
            int_precis = precis;
        if (rr->rel[i - 1] >= level) {
            while (current_cut >= 0 && rel_so_far == cutoffs[current_cut]) {
                sum += int_precis;
                current_cut--;
            }
            rel_so_far--;
        }
    }
    while (current_cut >= 0) {
        sum += int_precis;
        current_cut--;
    }
    return sum / (double) f->num_params;
}

/* m_rbp.c, default gains scaled into [0, 1] by the top grade (as the Python engine
 * reads trec_eval's normalisation, whose minimum is left unset there) */
static double calc_rbp(const ResRels *rr, double p)
{
    double top = ideal_at(rr, 0), sum = 0.0, cur_p = 1.0;
    long i;
    for (i = 0; i < rr->num_ret; i++) {
        double gain = gain_of(rr->rel[i]);
        if (top > 1)
            gain = (gain - 0.0) / (top - 0.0);
        if (gain != 0)
            sum += (double) gain * cur_p;
        cur_p = cur_p * p;
    }
    return (1.0 - p) * sum;
}

/* m_rbp_resid.c */
static double calc_rbp_resid(const ResRels *rr, double p)
{
    double sum = 0.0, cur_p = 1.0;
    long unj_so_far = 0, i;
    for (i = 0; i < rr->num_ret; i++) {
        if (rr->rel[i] < 0) {
            unj_so_far++;
            sum += cur_p;
        }
        cur_p = cur_p * p;
    }
    return unj_so_far ? cur_p + (1 - p) * sum : 0.0;
}

/* m_relstring.c: a character code a value, 0 past the string's end */
static void calc_relstring(const Family *f, const ResRels *rr, double *v)
{
    long i, len = f->cutoffs[0] < rr->num_ret ? f->cutoffs[0] : rr->num_ret;
    for (i = 0; i < f->width; i++) {
        char c = 0;
        if (i < len) {
            long rel = rr->rel[i];
            if (rel > 9)
                c = '>';
            else if (rel >= 0)
                c = (char) ('0' + rel);
            else if (rel == RELVALUE_NONPOOL)
                c = '-';
            else if (rel == RELVALUE_UNJUDGED)
                c = '.';
            else
                c = '<';
        }
        v[i] = (double) c;
    }
}

/* m_rel_P.c and m_unjudged.c: values at ascending cutoffs */
static void calc_cut(const Family *f, const ResRels *rr, long level, double *v)
{
    long i, c = 0, so_far = 0;
    int relative = f->code == F_RELATIVE_P;
    for (i = 0; i < f->count; i++)
        v[i] = 0.0;
    if (relative && rr->num_rel == 0)
        return;
    for (i = 0; i < rr->num_ret; i++) {
        if (i == f->cutoffs[c]) {
            v[c] = relative ? (double) so_far / (double) ((i > rr->num_rel) ? rr->num_rel : i)
                            : (double) so_far / (double) i;
            if (++c == f->count)
                break;
        }
        if (relative ? rr->rel[i] >= level
                     : rr->rel[i] == RELVALUE_NONPOOL || rr->rel[i] == RELVALUE_UNJUDGED)
            so_far++;
    }
    for (; c < f->count; c++) {
        i = f->cutoffs[c];
        v[c] = relative ? (double) so_far / (double) ((i > rr->num_rel) ? rr->num_rel : i)
                        : (double) so_far / (double) i;
    }
}

void ctrec_calc_all_trec(const Family *f, const ResRels *rr, long level, double *v)
{
    long i, rel_so_far = 0;
    double sum = 0.0;
    switch (f->code) {
    case F_RELSTRING:
        calc_relstring(f, rr, v);
        return;
    case F_INFAP:
        v[0] = calc_infap(rr, level);
        return;
    case F_GM_BPREF: {  /* m_gm_bpref.c: the log, averaged and exponentiated at the end */
        double bpref = ctrec_bpref(rr, level);
        v[0] = (double) log((double) (bpref > MIN_GEO_MEAN ? bpref : MIN_GEO_MEAN));
        return;
    }
    case F_RPREC_MULT:
        calc_Rprec_mult(f, rr, level, v);
        return;
    case F_UTILITY: {  /* m_utility.c (no -N: the collection's size is 0) */
        const double *params = f->levels;
        v[0] = params[0] * rr->num_rel_ret + params[1] * (rr->num_ret - rr->num_rel_ret) +
               params[2] * (rr->num_rel - rr->num_rel_ret) +
               params[3] * (0 + rr->num_rel_ret - rr->num_ret - rr->num_rel);
        return;
    }
    case F_11PT_AVG:
        v[0] = calc_11pt_avg(f, rr, level);
        return;
    case F_BING:  /* m_binG.c */
        for (i = 0; i < rr->num_ret; i++) {
            if (rr->rel[i] >= level) {
                rel_so_far++;
                sum += (double) 1.0 / (double) log2((double) (3 + i - rel_so_far));
            }
        }
        v[0] = rel_so_far ? sum / (double) rr->num_rel : 0.0;
        return;
    case F_G:
        v[0] = calc_G(rr);
        return;
    case F_NDCG_REL:
        v[0] = calc_ndcg_rel(rr);
        return;
    case F_RNDCG:
        v[0] = calc_Rndcg(rr);
        return;
    case F_RELATIVE_P:
    case F_UNJ:
        calc_cut(f, rr, level, v);
        return;
    case F_SET_P:  /* m_set_P.c */
        v[0] = rr->num_ret ? (double) rr->num_rel_ret / (double) rr->num_ret : 0.0;
        return;
    case F_SET_RELATIVE_P:  /* m_set_rel_P.c */
        v[0] = rr->num_ret && rr->num_rel
                   ? (double) rr->num_rel_ret /
                         (double) (rr->num_ret < rr->num_rel ? rr->num_ret : rr->num_rel)
                   : 0.0;
        return;
    case F_SET_RECALL:  /* m_set_recall.c */
        v[0] = rr->num_rel ? (double) rr->num_rel_ret / (double) rr->num_rel : 0.0;
        return;
    case F_SET_MAP:  /* m_set_map.c */
        v[0] = rr->num_ret && rr->num_rel
                   ? ((double) rr->num_rel_ret * (double) rr->num_rel_ret) /
                         ((double) rr->num_ret * (double) rr->num_rel)
                   : 0.0;
        return;
    case F_SET_F: {  /* m_set_F.c */
        double x = f->levels[0], P, R;
        v[0] = 0.0;
        if (rr->num_rel_ret) {
            P = (double) rr->num_rel_ret / (double) rr->num_ret;
            R = (double) rr->num_rel_ret / (double) rr->num_rel;
            v[0] = (x + 1.0) * P * R / (x * P + R);
        }
        return;
    }
    case F_NUM_NONREL_JUDGED_RET:  /* m_num_nonrel_judged_ret.c */
        v[0] = (double) rr->num_ret - rr->num_nonpool - rr->num_unjudged - rr->num_rel_ret;
        return;
    case F_RBP:
        v[0] = calc_rbp(rr, f->levels[0]);
        return;
    case F_RBP_RESID:
        v[0] = calc_rbp_resid(rr, f->levels[0]);
        return;
    }
}
