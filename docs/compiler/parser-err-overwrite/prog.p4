// SPDX-License-Identifier: Apache-2.0
/* bf-p4c (Tofino, TNA): parser_err packed with a field the parser extracts, so a parse overwrites it.
 * md.ri_req (1 bit, set from the shim in parse_shim) and ig_intr_md_from_prsr.parser_err share one
 * 32-bit container; parse_shim fills that container from 4 packet bytes at once ("0..3: W0"),
 * so a successful parse leaves packet bytes in parser_err and the gateway below drops the packet.
 * The @pa_container_size line only asks for a 32-bit container; the packing is the compiler's.
 * Adding @pa_solitary("ingress", "ig_intr_md_from_prsr.parser_err") removes the sharing.
 * Compile: bf-p4c --std p4-16 --target tofino --arch tna -o out prog.p4   (see out/pipe/prog.bfa) */
#include <core.p4>
#include <tna.p4>

header eth_h  { bit<48> dst; bit<48> src; bit<16> type; }
header shim_h { bit<4> version; bit<4> flags; bit<8> next; bit<16> rf; }
struct hdr_t  { eth_h eth; shim_h shim; }
struct md_t   { bit<1> ri_req; }

@pa_container_size("ingress", "ig_intr_md_from_prsr.parser_err", 32)
parser IgP(packet_in pkt, out hdr_t hdr, out md_t md, out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) { 0x88b5: parse_shim; default: accept; }
    }
    state parse_shim {
        pkt.extract(hdr.shim);
        md.ri_req = hdr.shim.flags[3:3];
        transition accept;
    }
}

control Ig(inout hdr_t hdr, inout md_t md, in ingress_intrinsic_metadata_t ig_intr_md,
           in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
           inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
           inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    action drop() { ig_dprsr_md.drop_ctl = 1; }
    action fwd(PortId_t p) { ig_tm_md.ucast_egress_port = p; }
    table t {
        key = { ig_prsr_md.parser_err: ternary; md.ri_req: exact; }
        actions = { drop; fwd; }
        default_action = drop();
    }
    apply { if (ig_prsr_md.parser_err == 0) { t.apply(); } }
}

control IgD(packet_out pkt, inout hdr_t hdr, in md_t md,
            in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply { pkt.emit(hdr); }
}

parser EgP(packet_in pkt, out hdr_t hdr, out md_t md, out egress_intrinsic_metadata_t eg_intr_md) {
    state start { pkt.extract(eg_intr_md); transition accept; }
}

control Eg(inout hdr_t hdr, inout md_t md, in egress_intrinsic_metadata_t eg_intr_md,
           in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
           inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
           inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply { }
}

control EgD(packet_out pkt, inout hdr_t hdr, in md_t md,
            in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply { }
}

Pipeline(IgP(), Ig(), IgD(), EgP(), Eg(), EgD()) pipe;
Switch(pipe) main;
