#include "pkg/plugins/podtopologyspread/podtopologyspread.h"
