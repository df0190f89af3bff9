#if !Server
#error("FieldMergeServerPrometheus needs the package trait Server (on by default; an app that names FieldMerge with traits: [] has turned it off)")
#endif
