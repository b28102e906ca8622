// recorder.cpp -- a recording stand-in for the CUDA runtime, for launch discovery with no GPU.
//
// A CUDA program's host code is linked against this file instead of libcudart
// (`nvcc -cudart none ... recorder.o`). Device memory is host memory (mmap, reserved lazily),
// copies and memsets are done on the host, kernels never run, and every launch is appended as
// one JSON line to $PERFMODEL_RECORD_OUT, flushed at once, so a program that later fails its
// result check (device code did not run) or aborts still leaves every launch made until then.
//
// Environment (set by perfmodel/static/launches.py):
//   PERFMODEL_RECORD_OUT     JSON-lines output file (required)
//   PERFMODEL_RECORD_DIR     folder for buffer snapshots (default: the output's folder)
//   PERFMODEL_RECORD_SPEC    kernel table: "K <mangled> <regs> <static smem> <local> <nparams> <size>..."
//                            and device lines "D <key> <value>" describing the target GPU
//   PERFMODEL_RECORD_MAX_BYTES  cap on the total bytes of buffer snapshots (default 512 MiB)
//   PERFMODEL_RECORD_AFTER_FIRST_LAUNCH_S  end the program this many seconds after its first launch
//                            (writing {"ev":"stopped"}): what follows a launch adds little to discovery
//
// Lines written: {"ev":"start"}, {"ev":"alloc",...}, {"ev":"free",...}, {"ev":"launch",...},
// {"ev":"library","seq":N,"library":"cuBLAS","name":"cublasSgemm_v2"} (a call into a CUDA library,
// made by the stubs perfmodel/static/libraries.py generates), {"ev":"exit"}. A launch lists its arguments (raw bytes in hex, with every 8-byte aligned word
// that points into a buffer resolved to buffer id + offset) and the state of each buffer its
// arguments point into: "file" (a snapshot of the bytes the host wrote, made when the buffer's
// content changed since its last snapshot), "fill" (the whole buffer was memset to one byte),
// "uninitialized" (never written by the host) or "skipped" (the snapshot cap was reached).
// Host-visible buffers (managed, pinned, __device__ variables) the host may write directly are
// compared by content; while their content stays the same, less and less often (every 2nd, 4th,
// ... up to every 1024th launch), so that timing loops over large managed buffers stay fast: a
// direct host write is then seen at the next comparison.
// Timing: events record nothing; cudaEventElapsedTime always answers kEventMs (1.0 ms), a fixed
// nonzero time so that programs that divide by it keep going.
#include <cuda_runtime_api.h>
#include <cxxabi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr float kEventMs = 1.0f;

struct KernelInfo {
  std::string mangled;
  int regs = 0, smem = 0, local = 0;
  std::vector<int> sizes;
  bool known = false;
  int max_dyn_smem = 48 * 1024;
};

struct Buffer {
  long id;
  char* base;
  size_t size;
  std::string kind;  // device, managed, host, symbol
  std::string name;  // symbol name
  long version = 0;
  long saved_version = -1;
  int fill = -1;  // >= 0: the whole buffer is this byte (not yet written to memory)
  bool written = false;
  uint64_t saved_hash = 0;
  std::string saved_file;
  bool skipped = false;
  bool owned = true;
  // host-visible buffers (managed, pinned host, __device__ symbols) are compared by content at
  // launches; while unchanged, every other time less often (timing loops of thousands of
  // launches on large managed buffers), and at once after a write through the runtime
  long next_check = 0, interval = 1, checked_version = -1;
  // pointers the snapshot holds: 8-byte aligned words that point into a buffer, as
  // (offset, buffer id, offset in it): arrays of device pointers, structs with pointers
  struct Target { size_t at; long id; size_t offset; };
  std::vector<Target> saved_pointers;
  bool pointers_cut = false;  // more than kMaxPointers: the rest are not listed
};
constexpr size_t kMaxPointers = 65536;

// Globals live in one never-destroyed object built on first use: nvcc's registration code runs
// from static initializers, possibly before this file's own globals would be constructed.
struct CallConfig {
  dim3 grid, block;
  size_t smem;
  void* stream;
};
struct State {
  FILE* out = nullptr;
  std::string dir;
  size_t cap = size_t(512) << 20, saved = 0;
  long next_buffer = 1, seq = 0;
  std::map<uintptr_t, Buffer*> buffers;        // base -> buffer
  std::map<const void*, KernelInfo> kernels;  // host stub -> kernel
  std::map<std::string, KernelInfo> spec;     // mangled -> sizes/resources
  std::map<std::string, std::string> device;  // target GPU description
  bool spec_loaded = false;
  cudaError_t last_error = cudaSuccess;
  long next_handle = 1;
  std::vector<CallConfig> config_stack;
  // CUDA graphs: the launches captured from a stream (or added as kernel nodes) are kept, not
  // written, and written again at each cudaGraphLaunch of an executable graph made from them
  std::map<long, std::vector<std::string>> graphs;  // graph handle -> launch lines (without "seq")
  std::map<long, long> executables;                   // executable graph handle -> graph handle
  std::map<uintptr_t, long> capturing;                // stream -> graph it is being captured into
};
State& S() {
  static State* s = new State;
  return *s;
}
std::recursive_mutex g_mu;
#define g_out S().out
#define g_dir S().dir
#define g_cap S().cap
#define g_saved S().saved
#define g_next_buffer S().next_buffer
#define g_seq S().seq
#define g_buffers S().buffers
#define g_kernels S().kernels
#define g_spec S().spec
#define g_device S().device
#define g_spec_loaded S().spec_loaded
#define g_last_error S().last_error
#define g_next_handle S().next_handle
#define g_config_stack S().config_stack
#define g_graphs S().graphs
#define g_executables S().executables
#define g_capturing S().capturing

void out_line(const std::string& s) {
  if (!g_out) return;
  std::fputs(s.c_str(), g_out);
  std::fputc('\n', g_out);
  std::fflush(g_out);
}

std::string fmt(const char* f, ...) {  // printf into a string of any length (a 32 KiB argument's hex)
  char buf[1024];
  va_list ap, again;
  va_start(ap, f);
  va_copy(again, ap);
  int n = std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  std::string out;
  if (n >= 0 && size_t(n) >= sizeof buf) {
    out.resize(size_t(n) + 1);
    std::vsnprintf(&out[0], out.size(), f, again);
    out.resize(size_t(n));
  } else {
    out = n >= 0 ? buf : "";
  }
  va_end(again);
  return out;
}

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') { o += '\\'; o += char(c); }
    else if (c < 0x20) o += fmt("\\u%04x", c);
    else o += char(c);
  }
  return o + "\"";
}

void load_spec() {
  if (g_spec_loaded) return;
  g_spec_loaded = true;
  const char* path = std::getenv("PERFMODEL_RECORD_SPEC");
  if (!path) return;
  FILE* f = std::fopen(path, "r");
  if (!f) return;
  char line[65536];
  while (std::fgets(line, sizeof line, f)) {
    char* save = nullptr;
    char* tok = strtok_r(line, " \n", &save);
    if (!tok) continue;
    if (tok[0] == 'K') {
      KernelInfo k;
      k.mangled = strtok_r(nullptr, " \n", &save);
      k.regs = std::atoi(strtok_r(nullptr, " \n", &save));
      k.smem = std::atoi(strtok_r(nullptr, " \n", &save));
      k.local = std::atoi(strtok_r(nullptr, " \n", &save));
      int n = std::atoi(strtok_r(nullptr, " \n", &save));
      for (int i = 0; i < n; ++i) k.sizes.push_back(std::atoi(strtok_r(nullptr, " \n", &save)));
      k.known = true;
      g_spec[k.mangled] = k;
    } else if (tok[0] == 'D') {
      char* key = strtok_r(nullptr, " \n", &save);
      char* val = strtok_r(nullptr, "\n", &save);
      if (key && val) g_device[key] = val;
    }
  }
  std::fclose(f);
}

long dev_int(const char* key, long dflt) {
  load_spec();
  auto it = g_device.find(key);
  return it == g_device.end() ? dflt : std::atol(it->second.c_str());
}

void start() {
  static bool started = false;
  if (started) return;
  started = true;
  const char* out = std::getenv("PERFMODEL_RECORD_OUT");
  if (out) g_out = std::fopen(out, "a");
  const char* dir = std::getenv("PERFMODEL_RECORD_DIR");
  if (dir) g_dir = dir;
  else if (out) {
    g_dir = out;
    size_t slash = g_dir.rfind('/');
    g_dir = slash == std::string::npos ? "." : g_dir.substr(0, slash);
  } else g_dir = ".";
  const char* cap = std::getenv("PERFMODEL_RECORD_MAX_BYTES");
  if (cap) g_cap = std::strtoull(cap, nullptr, 10);
  load_spec();
  out_line("{\"ev\":\"start\"}");
  std::atexit([] { std::lock_guard<std::recursive_mutex> l(g_mu); out_line(fmt("{\"ev\":\"exit\",\"launches\":%ld}", g_seq)); });
}

Buffer* find_buffer(const void* p) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = g_buffers.upper_bound(a);
  if (it == g_buffers.begin()) return nullptr;
  --it;
  Buffer* b = it->second;
  if (a >= it->first && a < it->first + (b->size ? b->size : 1)) return b;
  return nullptr;
}

// The whole buffer memset lazily: write the fill byte to memory before a partial access.
void materialize(Buffer* b) {
  if (b && b->fill >= 0) {
    std::memset(b->base, b->fill, b->size);
    b->fill = -1;
  }
}

void touched(Buffer* b) {
  if (b) { b->version++; b->written = true; }
}

Buffer* new_buffer(size_t size, const char* kind, cudaError_t* err) {
  size_t map = size ? size : 1;
  void* p = mmap(nullptr, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) { *err = cudaErrorMemoryAllocation; return nullptr; }
  Buffer* b = new Buffer{g_next_buffer++, static_cast<char*>(p), size, kind};
  g_buffers[reinterpret_cast<uintptr_t>(p)] = b;
  out_line(fmt("{\"ev\":\"alloc\",\"id\":%ld,\"size\":%zu,\"kind\":\"%s\"}", b->id, size, kind));
  *err = cudaSuccess;
  return b;
}

uint64_t hash_bytes(const char* p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0x100000001B3ull;
    h ^= h >> 29;
  }
  for (; i < n; ++i) h = (h ^ uint8_t(p[i])) * 0x100000001B3ull;
  return h;
}

// The buffer's state at a launch, as a JSON object (snapshot written when needed).
// The 8-byte aligned words of B's bytes that point into a buffer. Only words that can be a user-space
// pointer (below 2^47) inside the span of all buffers are looked up: a snapshot of data (random keys,
// floats) costs a shift and two compares per word.
void scan_pointers(Buffer* b) {
  b->saved_pointers.clear();
  b->pointers_cut = false;
  if (g_buffers.empty() || b->size < 8) return;
  uintptr_t lo = g_buffers.begin()->first;
  Buffer* last = g_buffers.rbegin()->second;
  uintptr_t hi = g_buffers.rbegin()->first + last->size;
  const char* p = b->base;
  size_t start = (8 - (reinterpret_cast<uintptr_t>(p) & 7)) & 7;
  for (size_t at = start; at + 8 <= b->size; at += 8) {
    uintptr_t w;
    std::memcpy(&w, p + at, 8);
    if ((w >> 47) != 0 || w < lo || w >= hi) continue;
    Buffer* t = find_buffer(reinterpret_cast<const void*>(w));
    if (!t) continue;
    if (b->saved_pointers.size() >= kMaxPointers) {
      b->pointers_cut = true;
      return;
    }
    b->saved_pointers.push_back({at, t->id, size_t(w - reinterpret_cast<uintptr_t>(t->base))});
  }
}

std::string pointers_json(Buffer* b) {
  if (b->saved_pointers.empty()) return "";
  std::string s = ",\"pointers\":[";
  for (size_t i = 0; i < b->saved_pointers.size(); ++i) {
    const Buffer::Target& t = b->saved_pointers[i];
    s += (i ? "," : "") + fmt("[%zu,%ld,%zu]", t.at, t.id, t.offset);
  }
  return s + "]" + (b->pointers_cut ? ",\"pointers_cut\":true" : "");
}

std::string buffer_state(Buffer* b) {
  std::string head = fmt("{\"id\":%ld,\"size\":%zu,\"kind\":\"%s\"", b->id, b->size, b->kind.c_str());
  if (!b->name.empty()) head += ",\"name\":" + json_str(b->name);
  if (b->fill >= 0) return head + fmt(",\"content\":\"fill\",\"fill\":%d}", b->fill);
  bool host_visible = b->kind == "managed" || b->kind == "host" || b->kind == "symbol";
  if (!b->written && !host_visible) return head + ",\"content\":\"uninitialized\"}";
  uint64_t h = 0;
  bool changed = b->version != b->saved_version;
  if (host_visible) {  // the host may write it directly: compare contents
    bool due = b->saved_file.empty() || b->version != b->checked_version || g_seq >= b->next_check;
    if (!due) {
      changed = false;
      h = b->saved_hash;
    } else {
      h = hash_bytes(b->base, b->size);
      changed = b->saved_file.empty() || h != b->saved_hash;
      b->interval = changed ? 1 : (b->interval < 1024 ? b->interval * 2 : 1024);
      b->next_check = g_seq + b->interval;
      b->checked_version = b->version;
    }
  }
  if (changed) {
    if (g_saved + b->size > g_cap) {
      b->skipped = true;
      b->saved_version = b->version;
      b->saved_file.clear();
      return head + fmt(",\"content\":\"skipped\",\"reason\":\"snapshot cap of %zu bytes reached\"}", g_cap);
    }
    std::string name = fmt("buf%ld_v%ld.bin", b->id, b->version);
    if (host_visible) name = fmt("buf%ld_h%016llx.bin", b->id, (unsigned long long)h);
    std::string path = g_dir + "/" + name;
    FILE* f = std::fopen(path.c_str(), "wb");
    bool ok = f && std::fwrite(b->base, 1, b->size, f) == b->size;
    if (f) std::fclose(f);
    if (!ok) return head + ",\"content\":\"skipped\",\"reason\":\"cannot write snapshot\"}";
    g_saved += b->size;
    b->saved_version = b->version;
    b->saved_hash = h;
    b->saved_file = name;
    b->skipped = false;
    scan_pointers(b);
  }
  if (b->skipped) return head + fmt(",\"content\":\"skipped\",\"reason\":\"snapshot cap of %zu bytes reached\"}", g_cap);
  return head + ",\"content\":\"file\",\"file\":" + json_str(b->saved_file) + pointers_json(b) + "}";
}

std::string demangle(const std::string& m) {
  int status = 0;
  char* d = abi::__cxa_demangle(m.c_str(), nullptr, nullptr, &status);
  std::string out = (status == 0 && d) ? d : m;
  std::free(d);
  return out;
}

KernelInfo* kernel_of(const void* func) {
  auto it = g_kernels.find(func);
  return it == g_kernels.end() ? nullptr : &it->second;
}

void launched();

// Writes a launch line now, or keeps it in a graph: the one given, or the one its stream is being captured into.
cudaError_t record_launch(const void* func, dim3 grid, dim3 block, void** args, size_t smem, void* stream, long graph = 0) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  start();
  KernelInfo* k = kernel_of(func);
  if (!graph) {
    auto cap = g_capturing.find(reinterpret_cast<uintptr_t>(stream));
    if (cap != g_capturing.end()) graph = cap->second;
  }
  std::string s;
  if (!graph) s = fmt("{\"ev\":\"launch\",\"seq\":%ld,", g_seq++);
  if (!k) {
    if (!graph) out_line(s + "\"kernel\":null,\"error\":\"launch of a function that is not a registered kernel\"}");
    return g_last_error = cudaErrorInvalidDeviceFunction;
  }
  cudaError_t err = cudaSuccess;
  const char* why = nullptr;
  long threads = long(block.x) * block.y * block.z;
  if (threads < 1 || threads > dev_int("max_threads_per_block", 1024) || block.z > 64) {
    err = cudaErrorInvalidConfiguration; why = "block size exceeds the target's limits";
  } else if (grid.x < 1 || grid.y < 1 || grid.z < 1 || grid.y > 65535 || grid.z > 65535) {
    err = cudaErrorInvalidConfiguration; why = "a grid dimension is 0 or exceeds the target's limits";
  } else if (long(smem) > k->max_dyn_smem) {
    err = cudaErrorInvalidValue; why = "dynamic shared memory exceeds the kernel's limit (cudaFuncSetAttribute)";
  } else if (long(smem) + k->smem > dev_int("max_shared_per_block_optin", 49152)) {
    err = cudaErrorInvalidValue; why = "shared memory exceeds the target's per-block limit";
  }
  s += "\"kernel\":" + json_str(k->mangled) + ",\"demangled\":" + json_str(demangle(k->mangled));
  s += fmt(",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"smem\":%zu,\"stream\":%lld", grid.x, grid.y, grid.z, block.x,
           block.y, block.z, smem, (long long)(uintptr_t)stream);
  if (why) s += ",\"error\":" + json_str(why);
  std::vector<Buffer*> used;
  s += ",\"args\":[";
  if (!k->known) s += "]";
  else {
    for (size_t i = 0; i < k->sizes.size(); ++i) {
      int n = k->sizes[i];
      const unsigned char* p = static_cast<const unsigned char*>(args ? args[i] : nullptr);
      std::string hex;
      for (int j = 0; p && j < n; ++j) hex += fmt("%02x", p[j]);
      s += (i ? "," : "") + fmt("{\"size\":%d,\"hex\":\"%s\",\"pointers\":[", n, hex.c_str());
      int np = 0;
      for (int at = 0; p && at + 8 <= n; at += 8) {
        uintptr_t w;
        std::memcpy(&w, p + at, 8);
        Buffer* b = w ? find_buffer(reinterpret_cast<const void*>(w)) : nullptr;
        if (!b) continue;
        s += (np++ ? "," : "") + fmt("[%d,%ld,%zu]", at, b->id, size_t(w - reinterpret_cast<uintptr_t>(b->base)));
        bool seen = false;
        for (Buffer* u : used) seen |= u == b;
        if (!seen) used.push_back(b);
      }
      s += "]}";
    }
    s += "]";
    if (!k->known) {}
  }
  if (!k->known) s += ",\"error\":\"kernel missing from the PTX parameter table\"";
  for (auto& kv : g_buffers) {  // __device__/__constant__ variables the host wrote
    Buffer* b = kv.second;
    bool seen = false;
    for (Buffer* u : used) seen |= u == b;
    if (b->kind == "symbol" && b->written && !seen) used.push_back(b);
  }
  // the states, and with them the buffers that the snapshots' pointers point into (a tree of
  // nodes, an array of pointers: their targets are the launch's buffers too)
  s += ",\"buffers\":[";
  std::map<long, Buffer*> by_id;
  std::set<Buffer*> listed(used.begin(), used.end());
  for (size_t i = 0; i < used.size(); ++i) {
    s += (i ? "," : "") + buffer_state(used[i]);
    if (used[i]->saved_pointers.empty() || used[i]->skipped) continue;
    if (by_id.empty())
      for (auto& kv : g_buffers) by_id[kv.second->id] = kv.second;
    for (const Buffer::Target& t : used[i]->saved_pointers) {
      auto found = by_id.find(t.id);
      if (found != by_id.end() && listed.insert(found->second).second) used.push_back(found->second);
    }
  }
  s += "]}";
  if (graph) g_graphs[graph].push_back(s);
  else {
    out_line(s);
    launched();
  }
  if (err != cudaSuccess) g_last_error = err;
  return err;
}

// After the first launch written, a watchdog thread ends the program once
// PERFMODEL_RECORD_AFTER_FIRST_LAUNCH_S have passed: a program that computes on the host for long
// before launching gets the whole time limit for that, while its timing loops and result checks
// after the launches do not keep discovery waiting.
void launched() {
  static bool armed = false;
  if (armed) return;
  armed = true;
  const char* limit = std::getenv("PERFMODEL_RECORD_AFTER_FIRST_LAUNCH_S");
  double seconds = limit ? std::atof(limit) : 0.0;
  if (seconds <= 0) return;
  std::thread([seconds] {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    std::lock_guard<std::recursive_mutex> l(g_mu);
    out_line(fmt("{\"ev\":\"stopped\",\"after_first_launch_s\":%g,\"launches\":%ld}", seconds, g_seq));
    std::_Exit(0);
  }).detach();
}

// A graph's launches, written as if launched now (each with a sequence number of its own).
void replay_graph(long graph) {
  for (const std::string& body : g_graphs[graph]) out_line(fmt("{\"ev\":\"launch\",\"seq\":%ld,", g_seq++) + body);
  if (!g_graphs[graph].empty()) launched();
}

long new_handle() { return ++g_next_handle; }

bool is_device(Buffer* b) { return b && (b->kind == "device" || b->kind == "symbol"); }

cudaError_t do_memcpy(void* dst, const void* src, size_t count) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  start();
  Buffer* d = find_buffer(dst);
  Buffer* s = find_buffer(src);
  if (d && (static_cast<char*>(dst) + count > d->base + d->size)) return g_last_error = cudaErrorInvalidValue;
  if (s && (static_cast<const char*>(src) + count > s->base + s->size)) return g_last_error = cudaErrorInvalidValue;
  materialize(s);
  if (d && d->fill >= 0 && !(dst == d->base && count == d->size)) materialize(d);
  if (d) d->fill = -1;
  if (count) std::memmove(dst, src, count);
  touched(d);
  return cudaSuccess;
}

cudaError_t do_memset(void* dst, int value, size_t count) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  start();
  Buffer* d = find_buffer(dst);
  if (!d) return g_last_error = cudaErrorInvalidValue;
  if (static_cast<char*>(dst) + count > d->base + d->size) return g_last_error = cudaErrorInvalidValue;
  if (dst == d->base && count == d->size && d->kind == "device") {
    d->fill = value & 0xff;  // lazily: nothing is written until a partial access
  } else {
    materialize(d);
    std::memset(dst, value, count);
  }
  touched(d);
  return cudaSuccess;
}

cudaError_t alloc(void** ptr, size_t size, const char* kind) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  start();
  if (!ptr) return g_last_error = cudaErrorInvalidValue;
  if (size > size_t(dev_int("dram_bytes", 80L << 30))) { *ptr = nullptr; return g_last_error = cudaErrorMemoryAllocation; }
  cudaError_t err;
  Buffer* b = new_buffer(size, kind, &err);
  *ptr = b ? b->base : nullptr;
  if (err != cudaSuccess) g_last_error = err;
  return err;
}

cudaError_t release(void* p) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  if (!p) return cudaSuccess;
  auto it = g_buffers.find(reinterpret_cast<uintptr_t>(p));
  if (it == g_buffers.end() || !it->second->owned) return g_last_error = cudaErrorInvalidValue;
  Buffer* b = it->second;
  out_line(fmt("{\"ev\":\"free\",\"id\":%ld}", b->id));
  munmap(b->base, b->size ? b->size : 1);
  g_buffers.erase(it);
  delete b;
  return cudaSuccess;
}

int occupancy(const void* func, int block_size, size_t dyn_smem) {
  KernelInfo* k = kernel_of(func);
  if (!k || block_size <= 0 || block_size > dev_int("max_threads_per_block", 1024)) return 0;
  if (k->regs > dev_int("max_registers_per_thread", 255)) return 0;
  int warps = (block_size + 31) / 32;
  long by_threads = dev_int("max_warps_per_sm", 64) / warps;
  long by_blocks = dev_int("max_blocks_per_sm", 32);
  long unit = dev_int("register_alloc_unit_per_warp", 256);
  long regs_per_warp = ((long(k->regs) * 32 + unit - 1) / unit) * unit;
  long by_regs = regs_per_warp ? (dev_int("registers_per_sm", 65536) / dev_int("schedulers_per_sm", 4) / regs_per_warp) *
                                     dev_int("schedulers_per_sm", 4) / warps
                               : by_blocks;
  long smem_unit = dev_int("shared_alloc_unit_bytes", 128);
  long smem = long(k->smem) + long(dyn_smem) + dev_int("shared_reserved_per_block_bytes", 1024);
  smem = (smem + smem_unit - 1) / smem_unit * smem_unit;
  long by_smem = smem ? dev_int("shared_per_sm_bytes", 233472) / smem : by_blocks;
  long n = by_threads;
  for (long v : {by_blocks, by_regs, by_smem}) n = v < n ? v : n;
  return int(n < 0 ? 0 : n);
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Entry points of nvcc-generated host code.
// ------------------------------------------------------------------------------------------
extern "C" {

// A call into a CUDA library (cuBLAS, cuDNN, ...): the generated stubs call this, then return success.
void perfmodel_library_call(const char* library, const char* name) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  start();
  long seq = g_seq++;
  out_line(fmt("{\"ev\":\"library\",\"seq\":%ld,\"library\":", seq) + json_str(library ? library : "") +
           ",\"name\":" + json_str(name ? name : "") + "}");
}

void** __cudaRegisterFatBinary(void* fat) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  start();
  static void* handle;
  handle = fat;
  return &handle;
}
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}

void __cudaRegisterFunction(void**, const char* hostFun, char* deviceFun, const char*, int, uint3*, uint3*, dim3*,
                            dim3*, int*) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  start();
  KernelInfo k;
  auto it = g_spec.find(deviceFun);
  if (it != g_spec.end()) k = it->second;
  k.mangled = deviceFun;
  g_kernels[hostFun] = k;
}

void __cudaRegisterVar(void**, char* hostVar, char*, const char* deviceName, int, size_t size, int constant, int) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  start();
  Buffer* b = new Buffer{g_next_buffer++, hostVar, size, "symbol", deviceName};
  b->owned = false;
  g_buffers[reinterpret_cast<uintptr_t>(hostVar)] = b;
  out_line(fmt("{\"ev\":\"alloc\",\"id\":%ld,\"size\":%zu,\"kind\":\"symbol\",\"name\":%s,\"constant\":%s}", b->id, size,
               json_str(deviceName).c_str(), constant ? "true" : "false"));
}
void __cudaRegisterManagedVar(void** h, void** hostVarPtrAddress, char* deviceAddress, const char* deviceName, int ext,
                              size_t size, int constant, int global) {
  __cudaRegisterVar(h, reinterpret_cast<char*>(hostVarPtrAddress), deviceAddress, deviceName, ext, size, constant, global);
}
char __cudaInitModule(void**) { return 0; }
void __cudaRegisterTexture(void**, const void*, const void**, const char*, int, int, int) {}
void __cudaRegisterSurface(void**, const void*, const void**, const char*, int, int) {}

unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, void* stream) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  g_config_stack.push_back({gridDim, blockDim, sharedMem, stream});
  return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3* gridDim, dim3* blockDim, size_t* sharedMem, void* stream) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  if (g_config_stack.empty()) return cudaErrorMissingConfiguration;
  CallConfig c = g_config_stack.back();
  g_config_stack.pop_back();
  *gridDim = c.grid;
  *blockDim = c.block;
  *sharedMem = c.smem;
  *static_cast<void**>(stream) = c.stream;
  return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* func) {
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<void*>(func));
  return cudaSuccess;
}
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s) {
  return record_launch(reinterpret_cast<const void*>(kernel), g, b, args, smem, s);
}
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s) {
  return record_launch(reinterpret_cast<const void*>(kernel), g, b, args, smem, s);
}
cudaError_t cudaLaunchKernel(const void* func, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s) {
  return record_launch(func, g, b, args, smem, s);
}
cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s) {
  return record_launch(func, g, b, args, smem, s);
}
cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s) {
  return record_launch(func, g, b, args, smem, s);
}
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args) {
  if (!config) return g_last_error = cudaErrorInvalidValue;
  return record_launch(func, config->gridDim, config->blockDim, args, config->dynamicSmemBytes, config->stream);
}

// ------------------------------------------------------------------------------------------
// Memory.
// ------------------------------------------------------------------------------------------
cudaError_t cudaMalloc(void** p, size_t size) { return alloc(p, size, "device"); }
cudaError_t cudaMallocManaged(void** p, size_t size, unsigned int) { return alloc(p, size, "managed"); }
cudaError_t cudaMallocHost(void** p, size_t size) { return alloc(p, size, "host"); }
cudaError_t cudaHostAlloc(void** p, size_t size, unsigned int) { return alloc(p, size, "host"); }
cudaError_t cudaMallocAsync(void** p, size_t size, cudaStream_t) { return alloc(p, size, "device"); }
cudaError_t cudaMallocPitch(void** p, size_t* pitch, size_t width, size_t height) {
  *pitch = (width + 511) / 512 * 512;
  return alloc(p, *pitch * height, "device");
}
cudaError_t cudaFree(void* p) { return release(p); }
cudaError_t cudaFreeHost(void* p) { return release(p); }
cudaError_t cudaFreeAsync(void* p, cudaStream_t) { return release(p); }
cudaError_t cudaHostRegister(void*, size_t, unsigned int) { return cudaSuccess; }
cudaError_t cudaHostUnregister(void*) { return cudaSuccess; }
cudaError_t cudaHostGetDevicePointer(void** d, void* h, unsigned int) { *d = h; return cudaSuccess; }

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind) { return do_memcpy(dst, src, count); }
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind, cudaStream_t) {
  return do_memcpy(dst, src, count);
}
cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                         cudaMemcpyKind) {
  for (size_t r = 0; r < height; ++r) {
    cudaError_t e = do_memcpy(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}
cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count, size_t offset, cudaMemcpyKind) {
  return do_memcpy(static_cast<char*>(const_cast<void*>(symbol)) + offset, src, count);
}
cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind) {
  return do_memcpy(dst, static_cast<const char*>(symbol) + offset, count);
}
cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count, size_t offset, cudaMemcpyKind k,
                                    cudaStream_t) {
  return cudaMemcpyToSymbol(symbol, src, count, offset, k);
}
cudaError_t cudaGetSymbolAddress(void** p, const void* symbol) { *p = const_cast<void*>(symbol); return cudaSuccess; }
cudaError_t cudaMemset(void* dst, int value, size_t count) { return do_memset(dst, value, count); }
cudaError_t cudaMemsetAsync(void* dst, int value, size_t count, cudaStream_t) { return do_memset(dst, value, count); }
cudaError_t cudaMemPrefetchAsync(const void*, size_t, cudaMemLocation, unsigned int, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  size_t t = size_t(dev_int("dram_bytes", 80L << 30));
  if (total) *total = t;
  if (free_bytes) *free_bytes = t - t / 64;
  return cudaSuccess;
}

// ------------------------------------------------------------------------------------------
// Device, errors, synchronization, streams, events, function attributes.
// ------------------------------------------------------------------------------------------
cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : (g_last_error = cudaErrorInvalidDevice); }
cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
cudaError_t cudaGetDeviceCount(int* n) { *n = 1; return cudaSuccess; }
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
cudaError_t cudaDeviceReset() { return cudaSuccess; }
cudaError_t cudaThreadSynchronize() { return cudaSuccess; }
cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache) { return cudaSuccess; }
cudaError_t cudaDeviceSetLimit(cudaLimit, size_t) { return cudaSuccess; }
cudaError_t cudaFree0() { return cudaSuccess; }

cudaError_t cudaGetLastError() { cudaError_t e = g_last_error; g_last_error = cudaSuccess; return e; }
cudaError_t cudaPeekAtLastError() { return g_last_error; }
const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDeviceFunction: return "cudaErrorInvalidDeviceFunction";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorMissingConfiguration: return "cudaErrorMissingConfiguration";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    default: return "cudaErrorUnknown";
  }
}
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    default: return "unknown error (perfmodel launch recorder)";
  }
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (!p || device != 0) return g_last_error = cudaErrorInvalidDevice;
  load_spec();
  std::memset(p, 0, sizeof *p);
  std::string name = g_device.count("name") ? g_device["name"] : "perfmodel target GPU";
  std::snprintf(p->name, sizeof p->name, "%s", name.c_str());
  p->totalGlobalMem = size_t(dev_int("dram_bytes", 80L << 30));
  p->sharedMemPerBlock = 48 * 1024;
  p->regsPerBlock = int(dev_int("registers_per_sm", 65536));
  p->warpSize = int(dev_int("warp_size", 32));
  p->memPitch = SIZE_MAX;
  p->maxThreadsPerBlock = int(dev_int("max_threads_per_block", 1024));
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->totalConstMem = 65536;
  p->major = int(dev_int("cc_major", 9));
  p->minor = int(dev_int("cc_minor", 0));
  p->textureAlignment = 512;
  p->texturePitchAlignment = 32;
  p->multiProcessorCount = int(dev_int("sm_count", 132));
  p->canMapHostMemory = 1;
  p->concurrentKernels = 1;
  p->asyncEngineCount = 2;
  p->unifiedAddressing = 1;
  p->memoryBusWidth = int(dev_int("memory_bus_width", 5120));
  p->l2CacheSize = int(dev_int("l2_bytes", 50331648));
  p->maxThreadsPerMultiProcessor = int(dev_int("max_threads_per_sm", 2048));
  p->globalL1CacheSupported = p->localL1CacheSupported = 1;
  p->sharedMemPerMultiprocessor = size_t(dev_int("shared_per_sm_bytes", 233472));
  p->regsPerMultiprocessor = int(dev_int("registers_per_sm", 65536));
  p->managedMemory = p->concurrentManagedAccess = p->cooperativeLaunch = 1;
  p->sharedMemPerBlockOptin = size_t(dev_int("max_shared_per_block_optin", 232448));
  p->maxBlocksPerMultiProcessor = int(dev_int("max_blocks_per_sm", 32));
  p->reservedSharedMemPerBlock = size_t(dev_int("shared_reserved_per_block_bytes", 1024));
  p->clusterLaunch = p->major >= 9;
  p->persistingL2CacheMaxSize = int(dev_int("l2_bytes", 50331648) / 4 * 3);  // as the runtime reports for A100/H100
  p->accessPolicyMaxWindowSize = 134213632;
  p->streamPrioritiesSupported = 1;
  p->pageableMemoryAccess = 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (!value || device != 0) return g_last_error = cudaErrorInvalidDevice;
  cudaDeviceProp p;
  cudaGetDeviceProperties(&p, 0);
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: case cudaDevAttrMaxBlockDimY: *value = 1024; break;
    case cudaDevAttrMaxBlockDimZ: *value = 64; break;
    case cudaDevAttrMaxGridDimX: *value = p.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: case cudaDevAttrMaxGridDimZ: *value = 65535; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = int(p.sharedMemPerBlock); break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = int(p.sharedMemPerBlockOptin); break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = int(p.sharedMemPerMultiprocessor); break;
    case cudaDevAttrTotalConstantMemory: *value = int(p.totalConstMem); break;
    case cudaDevAttrWarpSize: *value = p.warpSize; break;
    case cudaDevAttrMaxRegistersPerBlock: *value = p.regsPerBlock; break;
    case cudaDevAttrMaxRegistersPerMultiprocessor: *value = p.regsPerMultiprocessor; break;
    case cudaDevAttrClockRate: *value = int(dev_int("clock_khz", 1980000)); break;
    case cudaDevAttrMemoryClockRate: *value = int(dev_int("memory_clock_khz", 2619000)); break;
    case cudaDevAttrGlobalMemoryBusWidth: *value = p.memoryBusWidth; break;
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
    case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: *value = p.maxBlocksPerMultiProcessor; break;
    case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
    case cudaDevAttrConcurrentKernels: case cudaDevAttrUnifiedAddressing: case cudaDevAttrManagedMemory:
    case cudaDevAttrCooperativeLaunch: case cudaDevAttrConcurrentManagedAccess: *value = 1; break;
    case cudaDevAttrReservedSharedMemoryPerBlock: *value = int(p.reservedSharedMemPerBlock); break;
    case cudaDevAttrMaxPersistingL2CacheSize: *value = p.persistingL2CacheMaxSize; break;
    case cudaDevAttrMaxAccessPolicyWindowSize: *value = p.accessPolicyMaxWindowSize; break;
    case cudaDevAttrStreamPrioritiesSupported: case cudaDevAttrCanMapHostMemory: case cudaDevAttrGlobalL1CacheSupported:
    case cudaDevAttrLocalL1CacheSupported: case cudaDevAttrMemoryPoolsSupported: *value = 1; break;
    case cudaDevAttrClusterLaunch: *value = p.clusterLaunch; break;
    default: *value = 0;
  }
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  KernelInfo* k = kernel_of(func);
  if (!k) return g_last_error = cudaErrorInvalidDeviceFunction;
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || long(value) + k->smem > dev_int("max_shared_per_block_optin", 232448))
      return g_last_error = cudaErrorInvalidValue;
    k->max_dyn_smem = value;
  }
  return cudaSuccess;
}
cudaError_t cudaFuncSetCacheConfig(const void*, cudaFuncCache) { return cudaSuccess; }
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, const void* func) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  KernelInfo* k = kernel_of(func);
  if (!k || !a) return g_last_error = cudaErrorInvalidDeviceFunction;
  std::memset(a, 0, sizeof *a);
  a->sharedSizeBytes = size_t(k->smem);
  a->constSizeBytes = 0;
  a->localSizeBytes = size_t(k->local);
  a->maxThreadsPerBlock = int(dev_int("max_threads_per_block", 1024));
  a->numRegs = k->regs;
  a->ptxVersion = a->binaryVersion = int(dev_int("cc_major", 9) * 10 + dev_int("cc_minor", 0));
  a->maxDynamicSharedSizeBytes = k->max_dyn_smem;
  return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, const void* func, int block_size, size_t dyn_smem) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  if (!n) return cudaErrorInvalidValue;
  *n = occupancy(func, block_size, dyn_smem);
  return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* n, const void* func, int block_size,
                                                                    size_t dyn_smem, unsigned int) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, func, block_size, dyn_smem);
}

cudaError_t cudaStreamCreate(cudaStream_t* s) {
  *s = reinterpret_cast<cudaStream_t>(uintptr_t(++g_next_handle));
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int) { return cudaStreamCreate(s); }
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int, int) { return cudaStreamCreate(s); }
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) { return cudaSuccess; }

cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = reinterpret_cast<cudaEvent_t>(uintptr_t(++g_next_handle));
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) { return cudaEventCreate(e); }
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventRecordWithFlags(cudaEvent_t, cudaStream_t, unsigned int) { return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) { *ms = kEventMs; return cudaSuccess; }
cudaError_t cudaEventDestroy(cudaEvent_t) { return cudaSuccess; }

cudaError_t cudaDriverGetVersion(int* v) { *v = 13000; return cudaSuccess; }
cudaError_t cudaRuntimeGetVersion(int* v) { *v = 13000; return cudaSuccess; }

// ------------------------------------------------------------------------------------------
// Profiler control, device flags, peers, limits, priorities, callbacks (signatures stable since
// CUDA 11; functions whose signature changed between versions are left to the generated stubs of
// perfmodel/static/launches.py, which record the call and return cudaSuccess).
// ------------------------------------------------------------------------------------------
cudaError_t cudaProfilerStart() { return cudaSuccess; }
cudaError_t cudaProfilerStop() { return cudaSuccess; }
cudaError_t cudaSetDeviceFlags(unsigned int) { return cudaSuccess; }
cudaError_t cudaGetDeviceFlags(unsigned int* flags) { if (flags) *flags = 0; return cudaSuccess; }
cudaError_t cudaDeviceCanAccessPeer(int* can, int, int) { if (can) *can = 0; return cudaSuccess; }
cudaError_t cudaDeviceEnablePeerAccess(int, unsigned int) { return g_last_error = cudaErrorInvalidDevice; }
cudaError_t cudaDeviceDisablePeerAccess(int) { return g_last_error = cudaErrorInvalidDevice; }
cudaError_t cudaCtxResetPersistingL2Cache() { return cudaSuccess; }
cudaError_t cudaDeviceGetLimit(size_t* value, cudaLimit limit) {
  if (!value) return g_last_error = cudaErrorInvalidValue;
  *value = limit == cudaLimitStackSize ? 1024 : limit == cudaLimitPrintfFifoSize || limit == cudaLimitMallocHeapSize ? (8 << 20) : 0;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return cudaSuccess;
}
cudaError_t cudaStreamGetPriority(cudaStream_t, int* priority) { if (priority) *priority = 0; return cudaSuccess; }
cudaError_t cudaStreamGetFlags(cudaStream_t, unsigned int* flags) { if (flags) *flags = 0; return cudaSuccess; }
cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void* data, unsigned int) {
  if (callback) callback(stream, cudaSuccess, data);  // the stream's work is done at once here
  return cudaSuccess;
}
cudaError_t cudaLaunchHostFunc(cudaStream_t, cudaHostFn_t fn, void* data) {
  if (fn) fn(data);
  return cudaSuccess;
}
cudaError_t cudaMemset2D(void* dst, size_t pitch, int value, size_t width, size_t height) {
  for (size_t r = 0; r < height; ++r) {
    cudaError_t e = do_memset(static_cast<char*>(dst) + r * pitch, value, width);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}
cudaError_t cudaMemset2DAsync(void* dst, size_t pitch, int value, size_t width, size_t height, cudaStream_t) {
  return cudaMemset2D(dst, pitch, value, width, height);
}
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
}
cudaError_t cudaMemcpyPeer(void* dst, int, const void* src, int, size_t count) { return do_memcpy(dst, src, count); }
cudaError_t cudaMemcpyPeerAsync(void* dst, int, const void* src, int, size_t count, cudaStream_t) {
  return do_memcpy(dst, src, count);
}
cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count, size_t offset, cudaMemcpyKind,
                                      cudaStream_t) {
  return do_memcpy(dst, static_cast<const char*>(symbol) + offset, count);
}
cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  Buffer* b = find_buffer(symbol);
  if (!b || !size) return g_last_error = cudaErrorInvalidSymbol;
  *size = b->size;
  return cudaSuccess;
}

// ------------------------------------------------------------------------------------------
// CUDA graphs: stream capture and kernel nodes; each cudaGraphLaunch writes the graph's launches.
// ------------------------------------------------------------------------------------------
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  long g = new_handle();
  g_graphs[g];
  g_capturing[reinterpret_cast<uintptr_t>(stream)] = g;
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  auto it = g_capturing.find(reinterpret_cast<uintptr_t>(stream));
  if (it == g_capturing.end() || !graph) return g_last_error = cudaErrorIllegalState;
  *graph = reinterpret_cast<cudaGraph_t>(uintptr_t(it->second));
  g_capturing.erase(it);
  return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  if (status) *status = g_capturing.count(reinterpret_cast<uintptr_t>(stream)) ? cudaStreamCaptureStatusActive
                                                                              : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}
cudaError_t cudaGraphCreate(cudaGraph_t* graph, unsigned int) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  long g = new_handle();
  g_graphs[g];
  *graph = reinterpret_cast<cudaGraph_t>(uintptr_t(g));
  return cudaSuccess;
}
cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t*, size_t,
                                   const cudaKernelNodeParams* p) {
  if (!p) return g_last_error = cudaErrorInvalidValue;
  if (node) *node = reinterpret_cast<cudaGraphNode_t>(uintptr_t(new_handle()));
  return record_launch(p->func, p->gridDim, p->blockDim, p->kernelParams, p->sharedMemBytes, nullptr,
                       long(reinterpret_cast<uintptr_t>(graph)));
}
// Graph memory nodes: the allocation is made when the node is added (its address stays fixed across
// instantiations and launches, as the runtime promises) and kept: a free node only ends its use.
cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t* node, cudaGraph_t, const cudaGraphNode_t*, size_t,
                                     cudaMemAllocNodeParams* p) {
  if (!p) return g_last_error = cudaErrorInvalidValue;
  std::lock_guard<std::recursive_mutex> l(g_mu);
  start();
  if (node) *node = reinterpret_cast<cudaGraphNode_t>(uintptr_t(new_handle()));
  return alloc(&p->dptr, p->bytesize, "device");
}
cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t* node, cudaGraph_t, const cudaGraphNode_t*, size_t, void*) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  if (node) *node = reinterpret_cast<cudaGraphNode_t>(uintptr_t(new_handle()));
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  long e = new_handle();
  g_executables[e] = long(reinterpret_cast<uintptr_t>(graph));
  *exec = reinterpret_cast<cudaGraphExec_t>(uintptr_t(e));
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  return cudaGraphInstantiate(exec, graph, flags);
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  start();
  auto it = g_executables.find(long(reinterpret_cast<uintptr_t>(exec)));
  if (it == g_executables.end()) return g_last_error = cudaErrorInvalidValue;
  replay_graph(it->second);
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t) { return cudaSuccess; }
cudaError_t cudaGraphDestroy(cudaGraph_t) { return cudaSuccess; }

// A CUDA runtime function the recorder does not model: the stubs generated for them call this
// (one {"ev":"runtime_stub"} line), then return cudaSuccess.
void perfmodel_runtime_stub(const char* name) {
  std::lock_guard<std::recursive_mutex> l(g_mu);
  start();
  out_line("{\"ev\":\"runtime_stub\",\"name\":" + json_str(name ? name : "") + "}");
}

}  // extern "C"
