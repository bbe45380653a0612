// The step profile's clock readings (tt-bench --profile; gpu_model.c's tt_gpu_lm_profile): one
// launch between two parts of a step on its stream writes the device's nanosecond clock
// (%globaltimer) to stamps[slot] once the work queued before it has completed; part i takes
// stamps[i] - stamps[i - 1]. An event node there had cost each part about 3 us (ptb's 40 parts
// summed to 1.20 of the unmarked step), since a graph's event node ends the programmatic
// dependent launch of the kernel after it (common.cuh): that kernel's launch waited for the whole
// of the one before. This kernel lets the next one launch first and only then waits, so the next
// kernel's blocks are resident when the clock is read, as they are without the mark.
// It begins with common.cuh's tt_pdl_trigger_then_wait(), not tt_pdl_begin(): it touches memory
// only after its wait, as tests/test_pipeline.c's rule requires.
// Constants: TT_THREADS (one warp; lane 0 writes).

#ifdef TT_OP_PROF_MARK
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(unsigned long long *__restrict__ stamps, int slot)
{
    tt_pdl_trigger_then_wait();
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
    if (threadIdx.x == 0) stamps[slot] = t;
}
#endif
