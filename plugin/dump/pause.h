/* SPDX-License-Identifier: MIT */
/*
 * KFD processes paused by PROCESS_INFO during a dump, to be unpaused exactly
 * once each.
 *
 * Why at the dump stage's exit hook: the queues must stay stopped until CRIU
 * has dumped the tasks' memory (running queues would change GTT and userptr
 * memory under the dump), and UNPAUSE needs the dumper to still be the
 * ptracer of the target (docs/kfd-facts.md 1.3). CRIU 4.1.1 has no
 * DUMP_DEVICES_LATE hook; its cr_dump_finish() calls the plugins' exit hook
 * after every task's memory was written and before pstree_switch_state()
 * resumes or kills the tasks, on success and on failure alike. So each
 * PROCESS_INFO is paired with a duplicate of the target's fd (CRIU closes its
 * own copy after DUMP_EXT_FILE), and the exit hook unpauses through it.
 * A failed dump therefore also unpauses: the application keeps running.
 *
 * A failed UNPAUSE: EINTR and EAGAIN are retried (bounded, kfd_ioctl.h).
 * Any other error is final and logged as an error naming the pid: KFD
 * (kfd_process_restore_queues()) has already lowered the eviction count of
 * every GPU it tried, the failed ones included, so a second UNPAUSE would not
 * start their queues, only unbalance the counts; those queues stay
 * stopped. The exit hook cannot change CRIU's status, so that line is the
 * report (also after a dump that succeeded with
 * --leave-running). Such a process runs again after a restart, or after a
 * dump and restore (RESTORE creates its queues anew).
 */
#ifndef AMDGPU_CRIU_PAUSE_H
#define AMDGPU_CRIU_PAUSE_H

#include <stdint.h>

struct pause_list;

struct pause_list *pause_list_new(void);

/*
 * Pauses the KFD process behind target_fd with PROCESS_INFO (args is filled
 * with its answer). On success the process is tracked until
 * pause_list_release(); on failure nothing is tracked (PROCESS_INFO is rolled
 * back by the kernel). A second /dev/kfd file of a process paused already
 * (the process that PROCESS_INFO named holds both files; file_holder.h) is
 * refused with -EEXIST, logged, before PROCESS_INFO: a second one would
 * count an eviction that the one UNPAUSE does not undo.
 */
struct kfd_ioctl_criu_args;
int pause_process(struct pause_list *list, int target_fd, uint32_t file_id,
		  struct kfd_ioctl_criu_args *args);

/*
 * UNPAUSEs every tracked process once, closes the duplicates, frees the list.
 * Returns the number of processes that could not be unpaused (each logged).
 */
int pause_list_release(struct pause_list *list);

#endif
