# cython: language_level=3
# ReplayCore's state and C methods, declared (definitions and docstring in
# _replay.pyx), with the structs of its timer heap, active queue and
# preemption victims; a module that cimports ReplayCore loads hamisim._replay.
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint32_t

from hamisim._core cimport Core, PodSpec
from hamisim._meter cimport MeterCore
from hamisim._failtext cimport FailText
from hamisim._research cimport ResearchCore, bitgen_t


ctypedef struct RTimer:
    double time
    int64_t seq
    int32_t prio
    int32_t kind
    int32_t pod
    int32_t gen


ctypedef struct QItem:
    int64_t neg_priority
    double timestamp
    int64_t order


ctypedef struct VItem:
    # a running pod as preemption ranks it (kube-scheduler's MoreImportantPod:
    # higher priority, then earlier start in whole seconds; hamisim: bind order)
    int64_t neg_priority
    double start
    int64_t seq
    int32_t pod


cdef class ReplayCore:
    # -- inputs ----------------------------------------------------------
    cdef Core core
    cdef MeterCore meter
    cdef readonly int n_pods
    cdef const double[::1] arrival, duration, deletion          # NaN = none
    cdef const int32_t[::1] tmpl, priority
    cdef const int32_t[::1] pod_class
    cdef list t_spec
    cdef int64_t nom_refresh          # Core.n_refresh when the nominated load went on
    cdef int32_t[::1] t_gate_cls      # per template its gate class, -1 none
    cdef const uint8_t[::1] t_kind, t_wants_gpu, t_node_spread
    cdef const int32_t[::1] t_n_init
    cdef const int64_t[::1] t_cpu, t_mem
    cdef const double[::1] t_gpu
    # ResourceQuota (hamisim.hami.quota): per template its namespace's code (-1:
    # no limit there) and the webhook's request (-1 MiB: nothing to check); per
    # namespace code the limits (-1 = not set) and the usage of its bound pods
    cdef bint quotas
    cdef const int32_t[::1] t_qns
    cdef const int64_t[::1] t_qmem, t_qcores, q_lim_mem, q_lim_cores
    cdef int64_t[::1] q_used_mem, q_used_cores
    cdef object quota_denied
    # workload controllers (hamisim.kube.controllers): per pod its controller
    # (-1: bare) and refused creations; per controller its kind, failed syncs
    # since the last full one, pending sync time (inf: none) and waiting pods
    # (a list through cw_next, arrival order); per quota namespace the counts
    # of REFUSAL_FIELDS
    cdef bint controllers
    cdef const int32_t[::1] ctl
    cdef const uint8_t[::1] ctl_kind
    cdef int32_t[::1] ctl_refusals, ctl_fail, cw_head, cw_tail, cw_next
    cdef double[::1] ctl_next
    cdef readonly int64_t[:, ::1] q_ref
    cdef readonly int64_t n_uncreated
    cdef int64_t ctl_timers
    # lifecycle per template: grace period (s), when init containers finish
    # after bind (NaN: never), mutex-reserve (what-if: the pod reserves its cards)
    cdef const double[::1] t_grace, t_init_after
    cdef const uint8_t[::1] t_reserve
    cdef readonly int n_initial            # pods 0 .. n_initial-1 are the initial state
    # the periodic defragmenter (what-if): interval (0: none), moves per round,
    # pods by name (the order it tries them in), node names (its message)
    cdef double defrag_interval
    cdef int defrag_moves
    cdef const int64_t[::1] by_name
    cdef list node_names
    cdef int trial_node                    # where the last _defrag_replace put the pod
    cdef readonly int64_t n_defrag_moves
    cdef list lapsed                     # (pod, gen) of backoff pods whose retry lapsed
    cdef const int64_t[::1] node_start, card_off
    cdef const uint8_t[::1] pad_empty
    cdef const uint32_t[::1] pad_fam     # per node: bits of padded other families
    cdef list fam_words                  # per family id: its common word (bytes)
    cdef uint32_t fam_labels             # families whose lists name the card's type (AMD)
    cdef list type_words                 # per card type id: the type (bytes)
    cdef const uint8_t[::1] aligned      # per node: HAMi lists GPU-less containers too
    cdef bytes card_text
    cdef const char* card_chars
    # configuration
    cdef bint retry, random_ties, many_groups, sampled, hints
    cdef double flush_after, backoff_initial, backoff_max, interval
    cdef double backoff_period, leftover_period
    cdef int wanted
    cdef public int next_start
    #: not HAMi: the cluster's vectorised Python node policy (a
    #: hamisim.hami.noderows.RowRanker) for templates whose spec.user_rank is set
    cdef public object ranker
    # a research node policy decides instead of HAMi (_research.pyx's replay_*
    # methods; None: HAMi's kernel)
    cdef ResearchCore rcore
    # callbacks
    cdef object fail_message, pod_error, draw_block, progress, on_events, on_pods
    cdef FailText ftext                 # the failure text in C (None: fail_message)
    # a dry run's PostFilter text (None: preempt_message builds the whole text),
    # and its texts by verdict (UTF-8; asked once per verdict and counts)
    cdef object preempt_postfix
    cdef dict pf_post
    # -- per pod state (arrival order) -----------------------------------
    cdef int8_t[::1] status
    cdef int32_t[::1] attempts, gen, node, slot, u_prev, u_next
    cdef double[::1] first_attempt, bind_time
    # the leftover flush, one heap timer per pod: a pod marked unschedulable
    # again before its flush is due moves the due time (with the seq and gen
    # its own timer would have had); the timer in the heap (armed at fl_armed,
    # -1 none) re-arms itself there when it pops, instead of the heap holding a
    # stale timer per attempt
    cdef double[::1] fl_due, fl_armed
    cdef int64_t[::1] fl_seq
    cdef int32_t[::1] fl_gen
    cdef double[::1] arrived_at            # the clock at arrival (engine: st.arrival)
    # the queue: timestamp, the last message (while pending), changes at the last attempt
    cdef double[::1] timestamp
    cdef int8_t[::1] u_list
    cdef int64_t[::1] tried
    cdef list message
    cdef int rej_last                      # rejectors of the last failed _decide
    cdef int64_t changes, stale
    # unschedulable pods by list (U_EXTENDER, U_FIT), insertion order
    cdef int32_t u_head[2]
    cdef int32_t u_tail[2]
    cdef int32_t u_count[2]
    # running pods' usage, one slot each: rows and amounts (collapsed), devices
    cdef int slot_width, slot_cap, n_free
    cdef int32_t* slot_n
    cdef int64_t* slot_rows
    cdef int64_t* slot_used
    cdef int64_t* slot_mem
    cdef int64_t* slot_cores
    cdef int32_t* free_slots
    cdef list slot_devices
    # usage after the init containers finish (engine._init_done), for pods with
    # init_duration: rows and amounts of the app containers only
    cdef int32_t* after_n
    cdef int64_t* after_rows
    cdef int64_t* after_used
    cdef int64_t* after_mem
    cdef int64_t* after_cores
    cdef list slot_mig_after               # per slot None, or (rows, masks) kept then
    # HAMi issue #2965 measured (engine._book_deficit): per slot what the pod truly
    # uses beyond HAMi's booking, now (def_n[2 sl]) and once its init containers are
    # done (def_n[2 sl + 1]); def_buf holds 8 x slot_width per slot: rows, slots,
    # MiB, cores of the first, then of the second
    cdef int32_t* def_n
    cdef int64_t* def_buf
    cdef uint8_t[::1] q_pod                # per pod: counted in n_quirk_pods
    cdef readonly int64_t n_quirk_pods
    # MIG: per slot None, or (card rows, placement masks, annotation) of the
    # pod's MIG instances (Python objects for MIG pods only)
    cdef list slot_mig
    cdef bint has_mig
    cdef list mp_name, pl_place
    cdef object mig_annotation
    # collapse scratch (per card of a node)
    cdef int64_t[::1] c_app_u, c_app_m, c_app_c, c_ini_m, c_ini_c
    cdef uint8_t[::1] c_ini, c_touched
    cdef int32_t[::1] c_list
    # devices text
    cdef char* text
    cdef Py_ssize_t text_cap
    # timers and the active queue
    cdef RTimer* timers
    cdef Py_ssize_t n_timers, cap_timers
    cdef int64_t seq
    cdef QItem* active
    cdef Py_ssize_t n_active, cap_active
    # -- the run ---------------------------------------------------------
    cdef readonly double now
    cdef int upcoming                      # next pod to arrive, n_pods = none
    cdef readonly bint feeder_done
    cdef bint pass_wanted, pass_scheduled
    cdef readonly int64_t n_arrived, n_pending, n_running, n_departed, n_abandoned, n_rejected
    cdef readonly int64_t n_attempts, live
    #: pending pods by status (S_QUEUED, S_UNSCHEDULABLE, S_BACKOFF; others unused),
    #: attempts by kube-scheduler's result: scheduled, unschedulable, error
    cdef int64_t n_status[8]
    cdef int64_t n_result[3]
    cdef readonly double gpu_arrived
    cdef double next_sample, row_time, row_delay_sum
    cdef int64_t row_delay_n
    cdef readonly int64_t peak_alloc
    cdef readonly double peak_time, decision_time, last_time
    cdef double[::1] draws
    cdef Py_ssize_t n_draws, next_draw
    cdef int64_t arrivals_reported
    # -- records ---------------------------------------------------------
    cdef readonly object np_ev_time, np_ev_kind, np_ev_node, np_ev_pod
    cdef readonly object np_ev_count, np_ev_last
    cdef int64_t[::1] ev_count
    cdef double[::1] ev_last
    # failed attempts aggregated: per pod its open rows, and the rows' store
    cdef readonly bint aggregate
    cdef object np_ag_first, np_ag_last, np_ag_count, np_ag_seq, np_ag_pod, np_ag_next
    cdef int64_t[::1] ag_head, ag_tail, ag_cur, ag_count, ag_seq, ag_pod, ag_next
    cdef double[::1] ag_first, ag_last
    cdef list ag_msg
    cdef int64_t ag_free, ag_opened
    cdef Py_ssize_t ag_n
    cdef double[::1] ev_time
    cdef int8_t[::1] ev_kind
    cdef int64_t[::1] ev_node, ev_pod
    cdef readonly Py_ssize_t ev_n
    cdef readonly list ev_dev_rows, ev_devs, ev_msg_rows, ev_msgs
    cdef readonly object np_pd_pod, np_pd_class, np_pd_arrival, np_pd_first, np_pd_bind
    cdef readonly object np_pd_node, np_pd_attempts, np_pd_end
    cdef int64_t[::1] pd_pod, pd_node, pd_attempts
    cdef int32_t[::1] pd_class
    cdef double[::1] pd_arrival, pd_first, pd_bind, pd_end
    cdef readonly list pd_devs
    cdef readonly list pd_migs
    cdef readonly Py_ssize_t pd_n
    # per pod statistics, in pods-table order; queueing delays of bound pods
    cdef readonly object np_s_class, np_s_node, np_s_arrival, np_s_bind, np_s_end, np_delays
    cdef int32_t[::1] s_class, s_node
    cdef double[::1] s_arrival, s_bind, s_end, delays
    cdef readonly Py_ssize_t s_n, n_delays
    # per-group series (Recorder.sample_groups): rows of the current time by group
    cdef int64_t[:, ::1] g_now
    cdef uint8_t[::1] g_present
    cdef int32_t[::1] g_order
    cdef Py_ssize_t n_present
    cdef double g_time
    cdef bint g_has_time
    cdef readonly object g_times, g_rows          # array.array('d'), array.array('q')
    # -- kube-scheduler's own books (hamisim.kube.scheduler.KubeScheduler) ---------
    cdef bint preemption                   # DefaultPreemption is on (scheduler.preemption)
    # kube-scheduler <= 1.34 still preempts a victim already being deleted
    # (KubeScheduler.recalls_deleting, see _preempt_victims)
    cdef bint recalls_deleting
    cdef const uint8_t[::1] t_never        # per template: preemptionPolicy Never
    cdef object draw_offset, preempt_message, victim_message
    # draw_offset given as a numpy Generator: its bit generator, drawn in C
    cdef object offset_rng
    cdef bitgen_t* offset_bitgen
    # priorities as ranks (0 = lowest); running pods per rank, the lowest rank
    # running (n_ranks: none): "nobody to preempt" is one comparison
    cdef int32_t[::1] prio_rank
    cdef int64_t[::1] rank_count
    cdef int n_ranks, low_rank
    # running pods: start order, terminating flag, per node a linked list
    cdef int64_t[::1] bind_seq
    cdef double[::1] kube_start            # when it began running there (a move restarts it)
    cdef int64_t bind_counter
    cdef uint8_t[::1] terminating
    cdef int32_t[::1] on_prev, on_next, on_head, on_tail
    # nominations, in the order kube-scheduler's map got them (a linked list)
    cdef int32_t[:, ::1] node_rank_cnt     # running pods per node and priority rank
    cdef int32_t[::1] nom_node, nom_prev, nom_next
    cdef int32_t nom_head, nom_tail, n_nom
    cdef int32_t[::1] preemptor            # the pod whose preemption deleted it, -1
    cdef readonly int64_t n_preempted
    cdef readonly object np_pd_preempted
    cdef int32_t[::1] pd_preempted
    # PostFilter scratch: node marks and loads, potential nodes, victims, results
    cdef uint8_t[::1] pf_mark
    cdef int64_t[::1] pf_cpu, pf_mem
    cdef int32_t[::1] pf_nodes, pf_cleared, pf_errs
    cdef VItem* vic_cur
    cdef VItem* vic_best
    cdef Py_ssize_t vic_cap
    cdef int n_best, n_cleared, pf_node, pf_n_errors
    # the last dry run's random offset (-1: none drawn), its potential nodes'
    # count, and per error node its position among them (the shortcut's input)
    cdef int pf_start, pf_npot, pf_drawn
    cdef int32_t[::1] pf_errpos
    # -- the shortcut of repeated failures (_attempt) ---------------------
    # per template: the state key of the failed attempt it remembers (-1:
    # none), its columns SC_* (next_start in/out, priority, rejectors, PostFilter
    # verdict, the offset draw's n), its message, and a verdict's error nodes
    cdef int64_t[::1] sc_key, sc_rel
    cdef int32_t[:, ::1] sc_col
    cdef list sc_msg, sc_err
    # per template, the dry run's memo (NULL: none yet, or over the budget):
    # per node the version its verdict was made at and the verdict, valid for
    # the nominations (nom_ver) and priority it was made under
    cdef int64_t** pf_mver
    cdef int8_t** pf_mcode
    cdef int64_t* pf_mnom
    cdef int32_t* pf_mprio
    cdef Py_ssize_t pf_memo_n
    cdef Py_ssize_t pf_memo_bytes
    cdef int64_t nom_ver, q_ver
    cdef int64_t[::1] q_ns_ver              # per quota namespace, its usage's changes
    #: reuse a failed attempt's outcome while its state stands (identical runs;
    #: False re-decides every attempt)
    cdef public bint use_shortcut
    #: attempts answered by the shortcut
    cdef readonly int64_t n_reused
    # an open aggregated row per (pod, message): its index (Recorder.event's lookup)
    cdef dict ag_index
    cdef int64_t pf_n_cpu, pf_n_mem, pf_n_novict, pf_n_dry

    cdef int _init_quotas(self, Py_ssize_t n_templates, t_qns, t_qmem, t_qcores, q_lim_mem,
                          q_lim_cores, quota_denied) except -1
    cdef inline void _quota_apply(self, int k, int sign) noexcept
    cdef inline bint _quota_denies(self, int k) noexcept
    cdef inline void _quota_gate(self, int t, PodSpec spec) noexcept
    cdef int _init_controllers(self, Py_ssize_t n, ctl, ctl_kind) except -1
    cdef int _arrive_owned(self, int k, int c) except -1
    cdef int _sync(self, int c) except -1
    cdef int _create_owned(self, int k) except -1
    cdef int _ask_sync(self, int c, double delay) except -1
    cdef int _owned_pod_left(self, int c) except -1
    cdef int _grow_slots(self) except -1
    cdef int _text_room(self, Py_ssize_t need) except -1
    cdef int _schedule(self, double delay, int prio, int kind, int pod, int gen) except -1
    cdef RTimer _pop_timer(self) noexcept nogil
    cdef int _push_timer(self, double time, int64_t seq, int prio, int kind, int pod,
                         int gen) except -1
    cdef int _flush_later(self, int k, double delay) except -1
    cdef int _flush_popped(self, RTimer* t) except -1
    cdef inline double _peek(self) noexcept nogil
    cdef inline void _set_status(self, int k, int status)
    cdef int _enqueue(self, int k) except -1
    cdef int _pop_active(self) noexcept nogil
    cdef inline void _u_add(self, int k, int lst) noexcept
    cdef inline void _u_remove(self, int k) noexcept
    cdef int _failed(self, int k, object message) except -1
    cdef int _ag_grow(self, Py_ssize_t size) except -1
    cdef int _close_failed(self, int k) except -1
    cdef int _row(self, double time, int kind, int64_t k, int64_t node, object devices,
                  object message, int64_t count, double last) except -1
    cdef int _event(self, int kind, int k, int64_t node, object devices,
                    object message) except -1
    cdef int _done(self, int k, double end) except -1
    cdef int _sample(self, bint force) except -1
    cdef int _sample_groups(self, double time) except -1
    cdef int _arrivals(self) except -1
    cdef int _arrive(self, int k) except -1
    cdef int _pass(self) except -1
    cdef double _draw(self) except? -1.0
    cdef int _attempt(self, int k) except -1
    cdef inline int64_t _state_key(self) noexcept
    cdef int _init_gate_classes(self) except -1
    cdef int64_t _relevant_key(self, int t) noexcept
    cdef int _remember(self, int k, int t, int64_t key, int start_in, int pf,
                       object message) except -1
    cdef object _reuse(self, int k, int t)
    cdef bint _pf_memo_for(self, int t, int32_t p) except -1
    cdef object _fail_text(self, int t)
    cdef int _decide(self, int k, double draw) except -3
    cdef int _research_decide(self, int k, int t, int kind) except -3
    cdef int _hold(self, int k, int node) except -1
    cdef int _take_picks(self, int k, int node, int n_cont, int n_init) except -1
    cdef void _keep_app_usage(self, int sl, int n, int64_t r0) noexcept
    cdef inline void _collapse_pick(self, int p, int64_t mem, int64_t cores,
                                    bint app) noexcept
    cdef void _keep_deficit(self, int k, int sl, int n, int n_cont, int n_init,
                            int64_t r0) noexcept
    cdef inline void _meter_deficit(self, int k, int sl, int sign) noexcept
    cdef object _mig_app_instances(self, int node, int n_cont, int n_init)
    cdef object _mig_instances(self, int node, int n_cont)
    cdef object _devices_text(self, int node, int n_cont, int t)
    cdef Py_ssize_t _family_text(self, Py_ssize_t pos, int node, int n_cont,
                                 const int64_t* req, int f, bint pad) except -1
    cdef inline void _kernel_apply(self, int k, int node, int sign) noexcept
    cdef inline void _meter_apply(self, int k, int node, int sign) noexcept
    cdef inline void _meter_apply_cards(self, int k, int node, int sign) noexcept
    cdef int _bind(self, int k, int node) except -1
    cdef int _abandon(self, int k, str why, int kind=*) except -1
    cdef int _delete(self, int k) except -1
    cdef int _remove(self, int k, int kind, object message) except -1
    cdef int _terminate(self, int k, int kind, object message) except -1
    cdef int _init_done(self, int k, int gen) except -1
    cdef int _defrag_round(self) except -1
    cdef inline bint _movable(self, int k) noexcept
    cdef int _defrag_replace(self, int k) except -2
    cdef inline void _free_slot(self, int sl)
    cdef inline int _new_slot(self) except -1
    cdef int _defrag_undo(self, int k, int ts, int start) except -1
    cdef int _defrag_gain(self, int k, int ts) noexcept
    cdef bint _defrag_move(self) except -1
    cdef int _unschedulable(self, int k, int rejectors, object message,
                            bint renominated=*) except -1
    cdef int _changed(self, int event) except -1
    cdef inline double _backoff_end(self, int k) noexcept
    cdef int _move(self, int k) except -1
    cdef int _to_backoff(self, int k) except -1
    cdef inline bint _over(self) noexcept
    cdef int _retry(self, int k, int gen) except -1
    cdef int _leftover(self, int k, int gen) except -1
    cdef int64_t _offset(self, int64_t n) except -1
    cdef int _init_kube(self, Py_ssize_t n, priority, bint preemption, t_never, draw_offset,
                        preempt_message, victim_message) except -1
    cdef int _kube_bound(self, int k, int node) except -1
    cdef int _kube_gone(self, int k) except -1
    cdef inline void _nominate(self, int k, int node) noexcept
    cdef inline void _unnominate(self, int k) noexcept
    cdef int _nominated_load(self, int k, int sign) noexcept
    cdef int _schedule_kube(self, int k, double draw) except -3
    cdef bint _decide_only(self, int k, int node) except -1
    cdef int _vic_room(self, Py_ssize_t need) except -1
    cdef int _post_filter(self, int k) except -1
    cdef object _post_filter_message(self, int k, int pf)
    cdef int _preempt_victims(self, int k) except -1
    cdef int _settle(self) except -1
    cdef int _dispatch(self, RTimer* t) except -1
