// SPDX-License-Identifier: Apache-2.0
/* ffs-tofino: FFS as a P4 library. One include gives another TNA / T2NA program the FFS
 * constants, headers, parsers and controls (include/control/ffs_core.p4 states the interface);
 * p4src/ffs.p4 and p4src/examples/l2l3_acl.p4 are two programs built on it. Include <core.p4> and
 * <tna.p4> (or <t2na.p4>) first. */
#ifndef _FFS_LIB_P4_
#define _FFS_LIB_P4_

#include "define.p4"
#include "header.p4"
#include "parser.p4"
#include "control/pair_map.p4"
#include "control/rate_estimation.p4"
#include "control/normalize.p4"
#include "control/ri_update.p4"
#include "control/queue_guard.p4"
#include "control/egress_accounting.p4"
#include "control/ffs_core.p4"

#endif
