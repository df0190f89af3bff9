#if !Tools
#error("the fieldmerge executable needs the package trait Tools (on by default)")
#endif
