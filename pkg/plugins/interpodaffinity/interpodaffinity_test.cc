#include "pkg/plugins/interpodaffinity/interpodaffinity.h"
