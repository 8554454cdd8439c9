// trainer_info.c: what a run is about to do, for the programs' summary line (trainer.h).
// defines: sk_trainer_info
#include "trainer_internal.h"

void sk_trainer_info(const sk_trainer *t, sk_train_info *info) {
    const sk_train_options *o = &t->o;
    const size_t params = t->layout.total; // 0 before the model is configured
    const int64_t windows = o->eval_only ? 0 : (int64_t)sk_batcher_windows(&t->train, 0);
    // run_plan.c's end: the first limit reached (--max-iters on a tie).
    const int64_t end = t->end_step;
    const char *by = o->max_iters > 0 && o->max_iters == end ? "max-iters" : o->max_epochs > 0 ? "max-epochs" : NULL;
    *info = (sk_train_info){.n_params = params, .vocab_size = t->vocab.size, .corpus_chars = t->cache.ids.n,
                            .n_train = t->n_train, .n_val = t->n_val, .n_test = t->n_test,
                            .steps_per_epoch = windows, .start_step = t->st.step, .end_step = end, .ended_by = by};
}
