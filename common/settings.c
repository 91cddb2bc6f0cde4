#include "common/settings.h"

#ifndef FLASHBED_SOURCE_DIR
#define FLASHBED_SOURCE_DIR "."
#endif

struct fb_settings fb_settings_defaults(void)
{
    return (struct fb_settings){
        .configs_dir = FLASHBED_SOURCE_DIR "/configs",
        .plots_dir = FLASHBED_SOURCE_DIR "/plots",
        .min_parallel_work = FB_MIN_PARALLEL_WORK_DEFAULT,
        .pin_threads = true,
        .opencl_device = -1,
    };
}
