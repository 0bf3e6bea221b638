import{a,b,c}from"./chunk-4GUYSEB7.js";import"./chunk-HR7VDWJL.js";export{b as Credentials,c as TestOutcome,a as providerWords};
