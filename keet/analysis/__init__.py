"""The analysis layer: pure data that every presenter shares (the HTML report, the LLM tools,
`keet explain`, `keet compare`), computed from Profiles with the rules and the model, never read
from a file and never formatted for one reader.

- :mod:`keet.analysis.predictions`: the model's time for a kernel on every GPU of the hardware
  database, and on the profile's own GPU at the clock it was profiled at.
- :mod:`keet.analysis.compare`: the same kernels in two profiles matched (name, launch
  configuration, NVTX range), their time changes judged against the noise and a threshold, and
  each change explained by the rules' findings and the model's terms.
"""
