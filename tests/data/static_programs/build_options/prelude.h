// Included before build_options.cu with --include: defines what the program expects its build to provide.
#pragma once
#define PRELUDE_SCALE 3.0f
