"""CUDA libraries a program may call (cuBLAS, cuBLASLt, cuDNN, cuRAND, cuFFT, NCCL, NVTX,
cuSPARSE, cuSOLVER): how to recognise their functions and headers, and the stubs that let a
program calling them be built for launch discovery.

Launch discovery never links the real libraries (they would need a GPU, and their kernels are
not in the program's PTX). Every library function the program references is instead defined
by a generated stub (``stub_source``) that records the call (``perfmodel_library_call`` of
recorder/recorder.cpp: one ``{"ev":"library"}`` line) and returns 0, which is every one of
these libraries' success status (CUBLAS_STATUS_SUCCESS, CUDNN_STATUS_SUCCESS,
CURAND_STATUS_SUCCESS, CUFFT_SUCCESS, ncclSuccess); functions that answer a string answer a
fixed one. Stubs write nothing through their arguments: outputs (handles, results of cuRAND
generators or cuBLAS calls) stay as the program left them. The stubs are made for exactly the
symbols the link lacks, so any function of these C APIs links, whatever the library version.

CUDA runtime functions that recorder/recorder.cpp does not model (textures, IPC, graph edits,
functions whose signature changed between CUDA versions) get the same kind of stub: the call is
recorded (``{"ev":"runtime_stub"}``) and answers cudaSuccess, so the program goes on; what such a
call would have done on a GPU (a copy into a CUDA array, a graph node added by hand) is not done,
and ``perfmodel predict`` lists these calls.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Library:
    name: str  # as NVIDIA writes it
    symbol: re.Pattern  # C API function names
    header: re.Pattern  # header file names
    package: str  # the PyPI wheel that ships its headers


LIBRARIES = (
    Library("cuBLASLt", re.compile(r"^cublasLt\w+$"), re.compile(r"^cublasLt[\w.]*\.h$"), "nvidia-cublas"),
    Library("cuBLAS", re.compile(r"^cublas\w+$"), re.compile(r"^cublas[\w.]*\.h$"), "nvidia-cublas"),
    Library("cuDNN", re.compile(r"^cudnn\w+$"), re.compile(r"^cudnn[\w.]*\.h$"), "nvidia-cudnn-cu13"),
    Library("cuRAND", re.compile(r"^curand\w+$"), re.compile(r"^curand[\w.]*\.h$"), "nvidia-curand"),
    Library("cuFFT", re.compile(r"^cufft\w+$"), re.compile(r"^cufft[\w.]*\.h$"), "nvidia-cufft"),
    Library("NCCL", re.compile(r"^p?nccl\w+$"), re.compile(r"^nccl[\w.]*\.h$"), "nvidia-nccl-cu13"),
    Library("NVTX", re.compile(r"^nvtx\w+$"), re.compile(r"^(nvtx3/)?nvToolsExt\w*\.h$|^nvtx3/"), "nvidia-nvtx"),
    Library("cuSPARSE", re.compile(r"^cusparse\w+$"), re.compile(r"^cusparse[\w.]*\.h$"), "nvidia-cusparse"),
    Library("cuSOLVER", re.compile(r"^cusolver\w+$"), re.compile(r"^cusolver[\w.]*\.h$"), "nvidia-cusolver"),
)

# set-up functions (handles, descriptors, plans, attributes, queries, host<->device copies,
# communicator management, NVTX annotations): calls that launch no kernel of the library
_SETUP = re.compile(r"Create|Destroy|Set|Get|Plan|Init|Finalize|Version|String|Descriptor|Workspace|Query|Estimate|"
                    r"Attribute|Heuristic|Pref|Layout|Alloc|Free|Register|Group(Start|End)|Comm|UniqueId|Abort|"
                    r"Mark|Range|Name|Push|Pop|Domain|Category|Finaliz|Stream|Status|Error|Restore|Backup|[bB]ufferSize")


def launches_kernels(library: str, symbol: str) -> bool:
    """Whether a call of SYMBOL does the library's work on the GPU (cublasSgemm_v2,
    cudnnConvolutionForward, curandGenerateUniform, cufftExecC2C, ncclAllReduce), as opposed
    to setting it up (cublasCreate_v2, cufftPlan1d, cudnnSetTensor4dDescriptor, nvtxRangePushA)."""
    if library == "NVTX":
        return False
    base = re.sub(r"^(cublasLt|cublas|cudnn|curand|cufft|p?nccl|cusparse|cusolver(Dn|Sp|Rf|Mg)?)", "", symbol)
    return not _SETUP.search(base)


# functions answering a string (error and status names): a pointer to a fixed text
_STRING_RESULT = re.compile(r"(Error|Status)(String|Name)$|GetErrorString|GetLastError$")
_IDENTIFIER = re.compile(r"^[A-Za-z_]\w*$")


def library_of_symbol(symbol: str) -> Library | None:
    """The library whose C API SYMBOL (an unmangled function name) belongs to."""
    if not _IDENTIFIER.match(symbol):
        return None
    return next((lib for lib in LIBRARIES if lib.symbol.match(symbol)), None)


def library_of_header(header: str) -> Library | None:
    """The library that ships HEADER (as written in #include)."""
    return next((lib for lib in LIBRARIES if lib.header.match(header)), None)


_RUNTIME = re.compile(r"^cuda[A-Z]\w*$")
# OpenMP's runtime functions, for host code built without -fopenmp (its pragmas are then ignored
# and it runs on one thread): answers of a one-thread team
OPENMP = {
    "omp_get_thread_num": "int omp_get_thread_num() { return 0; }",
    "omp_get_num_threads": "int omp_get_num_threads() { return 1; }",
    "omp_get_max_threads": "int omp_get_max_threads() { return 1; }",
    "omp_get_num_procs": "int omp_get_num_procs() { return 1; }",
    "omp_in_parallel": "int omp_in_parallel() { return 0; }",
    "omp_set_num_threads": "void omp_set_num_threads(int) {}",
    "omp_set_dynamic": "void omp_set_dynamic(int) {}",
    "omp_get_wtime": ("double omp_get_wtime() { return std::chrono::duration<double>("
                      "std::chrono::steady_clock::now().time_since_epoch()).count(); }"),
}


def is_runtime_function(symbol: str) -> bool:
    """A CUDA runtime API function (cudaMemcpy3D, cudaGraphAddMemcpyNode, ...)."""
    return bool(_RUNTIME.match(symbol))


# Library functions that answer how many algorithms they found through an int* argument: a
# program that gets 0 gives up ("No cuBLASLt algorithm", llm.c's matmul_forward 3), so their stubs
# answer one (of the count the program asked for): (arguments, index of the count asked for,
# index of the int* answer). Their C signatures: cublasLtMatmulAlgoGetHeuristic(handle, op, A, B,
# C, D, preference, requestedAlgoCount, heuristicResultsArray[], int* returnAlgoCount); cuDNN's
# v7 getters and finders (handle, 4 descriptors, requestedAlgoCount, int* returnedAlgoCount, perf[]).
COUNT_ANSWERS = {"cublasLtMatmulAlgoGetHeuristic": (10, 7, 9),
                 **{name: (8, 5, 6) for name in (
                     "cudnnGetConvolutionForwardAlgorithm_v7", "cudnnGetConvolutionBackwardDataAlgorithm_v7",
                     "cudnnGetConvolutionBackwardFilterAlgorithm_v7", "cudnnFindConvolutionForwardAlgorithm",
                     "cudnnFindConvolutionBackwardDataAlgorithm", "cudnnFindConvolutionBackwardFilterAlgorithm")}}


def stub_source(symbols: list[str], runtime: list[str] = (), openmp: list[str] = ()) -> str:
    """C++ source defining a recording stub for each library function in SYMBOLS, for each
    CUDA runtime function in RUNTIME that the recorder does not model (recorded as such, and
    answering cudaSuccess), and the OpenMP functions in OPENMP (a one-thread team)."""
    lines = ["// generated by perfmodel.static.libraries: recording stubs for CUDA library calls", "#include <chrono>",
             'extern "C" void perfmodel_library_call(const char* library, const char* name);',
             'extern "C" void perfmodel_runtime_stub(const char* name);', 'extern "C" {']
    lines += [OPENMP[name] for name in sorted(set(openmp))]
    for symbol in sorted(set(runtime)):
        if not is_runtime_function(symbol):
            raise ValueError(f"{symbol} is not a CUDA runtime function")
        lines.append(f'int {symbol}() {{ perfmodel_runtime_stub("{symbol}"); return 0; }}')
    for symbol in sorted(set(symbols)):
        lib = library_of_symbol(symbol)
        if lib is None:
            raise ValueError(f"{symbol} is not a CUDA library function")
        record = f'perfmodel_library_call("{lib.name}", "{symbol}");'
        if _STRING_RESULT.search(symbol):
            lines.append(f'const char* {symbol}() {{ {record} return "success (perfmodel launch recorder stub)"; }}')
        elif symbol in COUNT_ANSWERS:
            count, asked, answer = COUNT_ANSWERS[symbol]
            params = ", ".join("int asked" if i == asked else "int* answer" if i == answer else "void*" for i in range(count))
            lines.append(f"int {symbol}({params}) {{ {record} if (answer) *answer = asked > 0 ? 1 : 0; return 0; }}")
        else:
            lines.append(f"int {symbol}() {{ {record} return 0; }}")
    lines.append("}")
    return "\n".join(lines) + "\n"
