#pragma once
// Where a streamed routed expert's bytes come from, and how they become matrices the forward pass
// multiplies by (docs/design.md "Expert tiers", step 3 "place": the disk tier).
//   container:  ONE read per expert: its blob [offset, offset + length) (gate, up and down
//               adjacent and 4096-aligned, docs/container.md) lands in the slot as stored; the
//               views point into it (quantised bytes or f32, never copied).
//   checkpoint: THREE reads per expert (gate, up, down; per-expert tensors or ranges of stacked
//               ones) of the source dtype, widened to f32 in the slot after the reads complete.
// Reads go through the aio::IoPool (buffered + posix_fadvise(DONTNEED), or O_DIRECT), each
// expert's from one disk: the primary, or a mirror of its files (tiers/disk_router.h).
// Thread-safety: load() may be called from any thread (the cache calls it without its lock,
// with the slot's memory taken under it); the `done` callback runs on a pool thread; view() is
// pure.
#include "aio/io_pool.h"
#include "core/status.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/weights.h"
#include "tiers/disk_router.h"
#include "tiers/heat_table.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace coli {
class Checkpoint;
namespace convert {
struct Container;
}
} // namespace coli

namespace coli::tiers {

// Alignment (bytes) of slot memory and of slotBytes(): O_DIRECT's (aio::kDirectIoAlign).
constexpr uint64_t kSlotAlign = aio::kDirectIoAlign;

class ExpertSource {
public:
    // A load's outcome: OK or the first error, and the disk that served it.
    using LoadDone = std::function<void(const Status&, Disk served)>;
    virtual ~ExpertSource() = default;
    // Bytes one slot needs (a multiple of kSlotAlign; the same for every expert of the model).
    virtual uint64_t slotBytes() const = 0;
    // Bytes read from disk to load one expert (all its reads; O_DIRECT alignment included).
    virtual uint64_t readBytes() const = 0;
    virtual int readsPerExpert() const = 0;
    // Starts loading `id` into `slot` (slotBytes(), kSlotAlign-aligned, owned by the caller until
    // `done` ran). `done` runs exactly once on a pool thread, after every read (and the f32
    // widening of a checkpoint's parts): OK, or the first read's Io error (naming the file), with
    // the disk that served the expert (a failed mirror read is retried on the primary first).
    virtual void load(ExpertId id, uint8_t* slot, LoadDone done) = 0;
    // Views of gate [expert_ffn, d_model], up [expert_ffn, d_model] and down
    // [d_model, expert_ffn] inside a slot loaded with `id`. Pure.
    virtual SwiGluView view(ExpertId id, const uint8_t* slot) const = 0;
    // e.g. "colibri container, 1 read of 3.4 MiB per expert (int4-g64)".
    virtual std::string describe() const = 0;
    // The formats of every expert's gate/up and down when all are quantised alike (the GPU tier
    // computes only those); false otherwise (f32 experts, mixed formats). Pure.
    virtual bool quantisedFormats(quant::WeightFormat* gateUp, quant::WeightFormat* down) const {
        (void)gateUp;
        (void)down;
        return false;
    }
    // The router of its reads (the mirror's state), or null for a source without one.
    virtual const DiskRouter* router() const { return nullptr; }
};

// The container's expert blobs (convert/manifest.h); opens its shards in `pool` (and their mirror
// copies named by `mirror`, tiers/disk_router.h; empty: no mirror).
// Errors: Unsupported for expert parts stored as bf16 or f8 (the views need f32 or a quantised
// format: convert with the default int4-g64 or int8); NotFound for a blob the config needs; the
// pool's openFile errors (a missing shard, O_DIRECT refused), naming the file.
// `pool` must outlive the source.
Result<std::unique_ptr<ExpertSource>> openContainerSource(const convert::Container& c,
                                                          const ModelConfig& cfg, aio::IoPool& pool,
                                                          const MirrorSetup& mirror = {});

// Whether openCheckpointSource opens a checkpoint's shards buffered under the pool's `mode`: Off
// yes, On no; Auto (docs/tiers.md "Buffered or O_DIRECT") only when the experts are stored as
// F32 (`expertDtype`): an O_DIRECT read of an F32 part lands in a staging area the size of the
// part (its range is rounded out to whole blocks), which doubles the slot, where a buffered one
// lands in the slot as stored. F16/BF16 parts are staged either way. Pure.
bool checkpointReadsBuffered(aio::DirectIo mode, DType expertDtype);

// An unconverted Hugging Face checkpoint (F32 / F16 / BF16); opens its shards in `pool` (and their
// mirror copies, as above): O_DIRECT or buffered per checkpointReadsBuffered and each file's
// check (IoPool::openFile); a part of a file read through O_DIRECT is read rounded out to
// kSlotAlign boundaries into the slot's staging area.
// Errors: those of locateExpert (model/weights.h), Unsupported for other dtypes, the pool's
// openFile errors. `ckpt` and `pool` must outlive the source.
Result<std::unique_ptr<ExpertSource>> openCheckpointSource(const Checkpoint& ckpt,
                                                           const ModelConfig& cfg,
                                                           aio::IoPool& pool,
                                                           const MirrorSetup& mirror = {});

} // namespace coli::tiers
